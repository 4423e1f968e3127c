/* tests/support/proc_util.h — the built `pipebench` ($PB_PIPEBENCH) as a process a test signals:
 * started in a scratch folder in a process group of its own (as a terminal's job is),
 * its stdout and stderr read line by line while it runs, the group signalled (SIGINT as
 * a Ctrl-C sends it, SIGKILL), and its exit status collected with the whole output. */
#ifndef PB_TEST_PROC_UTIL_H
#define PB_TEST_PROC_UTIL_H

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct proc {
    pid_t pid;
    FILE *out;
    char log[1 << 16];   /* what it printed so far */
    size_t len;
};

/* Starts the shell command cmd (its output read as pipebench's). */
static inline void proc_start_shell(struct proc *p, const char *cmd)
{
    int fds[2];
    ck_assert(pipe(fds) == 0);
    fflush(stdout);
    p->pid = fork();
    ck_assert(p->pid >= 0);
    if (p->pid == 0) {
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(p->pid, p->pid);   /* also here: no race with a signal sent right after */
    close(fds[1]);
    p->out = fdopen(fds[0], "r");
    ck_assert(p->out != NULL);
    p->len = 0;
    p->log[0] = 0;
}

/* Starts `pipebench ARGS` (a shell word list) in folder dir. */
static inline void proc_start(struct proc *p, const char *dir, const char *args)
{
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert_msg(bin != NULL, "PB_PIPEBENCH is not set (run through meson test)");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && exec '%s' %s 2>&1", dir, bin, args);
    proc_start_shell(p, cmd);
}

/* Reads lines until `times` of them (counted from the start of the output) contain
 * want; false at the end of the output before that. */
static inline bool proc_wait_for(struct proc *p, const char *want, int times)
{
    for (;;) {
        int seen = 0;
        for (const char *s = p->log; (s = strstr(s, want)) != NULL; s += strlen(want))
            seen++;
        if (seen >= times)
            return true;
        if (p->len + 1 >= sizeof p->log || !fgets(p->log + p->len, (int)(sizeof p->log - p->len),
                                                  p->out))
            return false;
        p->len += strlen(p->log + p->len);
    }
}

/* Sends sig to the process group. */
static inline void proc_signal(const struct proc *p, int sig)
{
    kill(-p->pid, sig);
}

/* Reads the rest of the output and waits: the exit status, or 128 + the signal that
 * ended it. */
static inline int proc_finish(struct proc *p)
{
    size_t r;
    while (p->len + 1 < sizeof p->log &&
           (r = fread(p->log + p->len, 1, sizeof p->log - 1 - p->len, p->out)) > 0)
        p->len += r;
    p->log[p->len] = 0;
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p->out) > 0)
        ;
    fclose(p->out);
    int st;
    while (waitpid(p->pid, &st, 0) < 0)
        ck_assert(errno == EINTR);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
