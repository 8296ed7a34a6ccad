/*
 * tcp_fault_proxy.c -- see tcp_fault_proxy.h.
 *
 * One thread polls the listening socket and the current connection pair
 * with a 100 ms timeout, so tcp_fault_proxy_stop() is noticed promptly.
 * Lost exchanges end with an RST (SO_LINGER 0): the client sees a reset or
 * an empty reply at once, never a slow FIN-wait.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_fault_proxy.h"

static void hard_close(int fd)
{
	struct linger lg = { 1, 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* Serve one client connection until it ends; 1 if a new client waits. */
static int serve(struct tcp_fault_proxy *p, int cfd)
{
	int ufd = socket(AF_INET, SOCK_STREAM, 0), ret = 0;
	char buf[65536];

	if (ufd < 0 || connect(ufd, (struct sockaddr *)&p->upstream,
			       sizeof(p->upstream)) < 0) {
		hard_close(ufd);
		hard_close(cfd);
		return 0;
	}
	while (!atomic_load(&p->stop)) {
		struct pollfd fds[3] = {
			{ cfd, POLLIN, 0 }, { ufd, POLLIN, 0 },
			{ p->lfd, POLLIN, 0 },
		};
		int mode;
		ssize_t n;

		if (poll(fds, 3, 100) < 0 && errno != EINTR)
			break;
		if (fds[2].revents & POLLIN) {
			ret = 1;
			break;
		}
		mode = atomic_load(&p->mode);
		if (fds[0].revents & (POLLIN | POLLHUP)) {
			n = read(cfd, buf, sizeof(buf));
			if (n <= 0)
				break;
			if (mode == PROXY_DROP_REQUEST) {
				usleep(20000); /* let the rest arrive unread */
				atomic_fetch_add(&p->cut, 1);
				break;
			}
			if (write(ufd, buf, (size_t)n) != n)
				break;
		}
		if (fds[1].revents & (POLLIN | POLLHUP)) {
			n = read(ufd, buf, sizeof(buf));
			if (n <= 0)
				break;
			if (mode == PROXY_DROP_REPLY ||
			    mode == PROXY_DROP_REPLY_ONCE) {
				if (mode == PROXY_DROP_REPLY_ONCE)
					atomic_store(&p->mode, PROXY_FORWARD);
				atomic_fetch_add(&p->cut, 1);
				break;
			}
			if (write(cfd, buf, (size_t)n) != n)
				break;
		}
	}
	hard_close(cfd);
	close(ufd);
	return ret;
}

static void *run(void *arg)
{
	struct tcp_fault_proxy *p = arg;

	while (!atomic_load(&p->stop)) {
		struct pollfd pfd = { p->lfd, POLLIN, 0 };
		int cfd;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		do {
			cfd = accept(p->lfd, NULL, NULL);
			if (cfd < 0)
				break;
			atomic_fetch_add(&p->accepted, 1);
		} while (serve(p, cfd));
	}
	return NULL;
}

int tcp_fault_proxy_start(struct tcp_fault_proxy *p, const char *upstream)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	char host[64];
	int port, err;

	memset(p, 0, sizeof(*p));
	p->lfd = -1;
	if (sscanf(upstream, "%63[^:]:%d", host, &port) != 2 || port <= 0 ||
	    port > 65535) {
		errno = EINVAL;
		return -1;
	}
	p->upstream.sin_family = AF_INET;
	p->upstream.sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, host, &p->upstream.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((p->lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(p->lfd, 8) < 0 ||
	    getsockname(p->lfd, (struct sockaddr *)&a, &len) < 0)
		goto fail;
	p->port = ntohs(a.sin_port);
	if ((err = pthread_create(&p->thread, NULL, run, p))) {
		errno = err;
		goto fail;
	}
	return 0;
fail:
	err = errno;
	if (p->lfd >= 0)
		close(p->lfd);
	errno = err;
	return -1;
}

void tcp_fault_proxy_stop(struct tcp_fault_proxy *p)
{
	atomic_store(&p->stop, 1);
	pthread_join(p->thread, NULL);
	close(p->lfd);
}
