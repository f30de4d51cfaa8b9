/*
 * faketime_shim.c
 *		Preloaded ahead of libfaketime into a server under test.
 *
 * libfaketime 0.9.10 wraps epoll_wait, poll and select, and serves the real
 * time to every caller while a thread is inside one of them.  PostgreSQL's
 * SIGALRM handler runs inside WaitLatch's epoll_wait, so it reads the real
 * clock while the timeouts it checks were set from the faked one: with the
 * server's clock stepped forward by N s, lock_timeout and statement_timeout
 * fire N s late (a 1 s lock_timeout took 4.07 s at +3 s), which no real
 * clock step does (the kernel's timer is relative).  These call the kernel
 * directly: the waits keep their timeouts (the suite sets no speed factor)
 * and the handler sees the faked clock, as every other caller does.
 * tests/fault/clock_check.cpp (ctest fault.clock_timers) measures it.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <unistd.h>

int
epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	return (int) syscall(SYS_epoll_pwait, epfd, events, maxevents, timeout, NULL, _NSIG / 8);
}

int
epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
			const sigset_t *sigmask)
{
	return (int) syscall(SYS_epoll_pwait, epfd, events, maxevents, timeout, sigmask, _NSIG / 8);
}

int
poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct timespec ts;

	if (timeout < 0)
		return (int) syscall(SYS_ppoll, fds, nfds, NULL, NULL, _NSIG / 8);
	ts.tv_sec = timeout / 1000;
	ts.tv_nsec = (long) (timeout % 1000) * 1000000L;
	return (int) syscall(SYS_ppoll, fds, nfds, &ts, NULL, _NSIG / 8);
}

int
select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	struct timespec ts;
	long		rc;

	if (timeout == NULL)
		return (int) syscall(SYS_pselect6, nfds, readfds, writefds, exceptfds, NULL, NULL);
	ts.tv_sec = timeout->tv_sec;
	ts.tv_nsec = timeout->tv_usec * 1000L;
	rc = syscall(SYS_pselect6, nfds, readfds, writefds, exceptfds, &ts, NULL);
	/* as Linux's select: the time not slept */
	timeout->tv_sec = ts.tv_sec;
	timeout->tv_usec = ts.tv_nsec / 1000L;
	return (int) rc;
}
