/* proc.c: see proc.h. */
#include "profiler/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct buf {
    char *data;
    size_t len, cap;
} buf;

static int buf_read(buf *b, int fd) {
    if (b->cap - b->len < 4097) {
        size_t cap = b->cap ? b->cap * 2 : 16384;
        char *d = realloc(b->data, cap);
        if (!d)
            return -1;
        b->data = d;
        b->cap = cap;
    }
    ssize_t r = read(fd, b->data + b->len, b->cap - b->len - 1);
    if (r > 0)
        b->len += (size_t)r;
    return r > 0 ? 1 : (r == 0 || errno != EINTR) ? 0 : 1;
}

static char *buf_take(buf *b) {
    if (!b->data)
        return calloc(1, 1);
    b->data[b->len] = '\0';
    return b->data;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void prof_proc_result_free(prof_proc_result *res) {
    if (!res)
        return;
    free(res->out);
    free(res->errout);
    memset(res, 0, sizeof *res);
}

int prof_proc_run(const char *const argv[], int timeout_s, prof_proc_result *res, tm_err *err) {
    memset(res, 0, sizeof *res);
    int po[2], pe[2], px[2]; /* stdout, stderr, exec-failure report (close-on-exec) */
    if (pipe(po) != 0)
        return tm_err_set(err, "%s: cannot create a pipe: %s", argv[0], strerror(errno));
    if (pipe(pe) != 0) {
        close(po[0]), close(po[1]);
        return tm_err_set(err, "%s: cannot create a pipe: %s", argv[0], strerror(errno));
    }
    if (pipe2(px, O_CLOEXEC) != 0) {
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        return tm_err_set(err, "%s: cannot create a pipe: %s", argv[0], strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]), close(px[0]), close(px[1]);
        return tm_err_set(err, "%s: cannot fork: %s", argv[0], strerror(errno));
    }
    if (pid == 0) {
        /* Own process group, so a timeout kills the tool's workers (fio forks) too. */
        setpgid(0, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]), close(pe[0]), close(px[0]), close(po[1]), close(pe[1]);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        /* The parsers expect the C locale's decimal points and English lscpu keys. */
        setenv("LC_ALL", "C", 1);
        execvp(argv[0], (char *const *)argv);
        int e = errno;
        ssize_t w = write(px[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(po[1]), close(pe[1]), close(px[1]);
    int exec_errno = 0;
    ssize_t got = read(px[0], &exec_errno, sizeof exec_errno);
    close(px[0]);
    buf bo = {0}, be = {0};
    int rc = 0;
    if (got == (ssize_t)sizeof exec_errno) {
        close(po[0]), close(pe[0]);
        waitpid(pid, NULL, 0);
        if (exec_errno == ENOENT)
            return tm_err_set(err, "%s: not found in PATH; install the %s package", argv[0],
                              argv[0]);
        return tm_err_set(err, "%s: cannot run: %s", argv[0], strerror(exec_errno));
    }
    long long deadline = timeout_s > 0 ? now_ms() + (long long)timeout_s * 1000 : 0;
    struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
    int open_fds = 2;
    while (open_fds > 0) {
        int wait_ms = -1;
        if (deadline) {
            long long left = deadline - now_ms();
            if (left <= 0) {
                res->timed_out = true;
                kill(-pid, SIGKILL);
                break;
            }
            wait_ms = left > 1000 ? 1000 : (int)left;
        }
        int n = poll(fds, 2, wait_ms);
        if (n < 0 && errno != EINTR) {
            rc = tm_err_set(err, "%s: poll failed: %s", argv[0], strerror(errno));
            kill(-pid, SIGKILL);
            break;
        }
        for (int i = 0; i < 2 && n > 0; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int more = buf_read(i == 0 ? &bo : &be, fds[i].fd);
            if (more < 0) {
                rc = tm_err_set(err, "%s: out of memory capturing its output", argv[0]);
                kill(-pid, SIGKILL);
                open_fds = 0;
                break;
            }
            if (!more) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    res->out = buf_take(&bo);
    res->errout = buf_take(&be);
    if (WIFEXITED(status)) {
        res->exit_status = WEXITSTATUS(status);
    } else {
        res->exit_status = -1;
        res->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    if (rc != 0)
        prof_proc_result_free(res);
    return rc;
}
