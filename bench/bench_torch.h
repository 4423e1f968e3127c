/* bench/bench_torch.h — a PyTorch child process for the benchmarks that compare with it:
 * a python interpreter (bench_peers.h says which) running a script of bench/ that reads
 * requests on its stdin and answers on its stdout, its first line "torch VERSION ..."
 * (bench/torch_peer.py), and the requests the scripts share: "step KEY THREADS WARMUP REPS"
 * (the median seconds of one step) and "drop KEY". */
#ifndef PB_BENCH_TORCH_H
#define PB_BENCH_TORCH_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct bench_torch {
    FILE *req, *ans;   /* NULL when no child runs */
    pid_t pid;
    char version[512];  /* the first line, "torch VERSION ..." */
    char label[24];     /* "pt" and the version's MAJOR.MINOR: pt1.13, pt2.15 */
    const char *who;    /* the benchmark, for messages */
};

/* "pt" and MAJOR.MINOR of the version line "torch 1.13.0a0 ..." into t->label. */
static inline void bench_torch_label(struct bench_torch *t)
{
    const char *v = t->version + 6;
    size_t n = strspn(v, "0123456789");
    if (v[n] == '.')
        n += 1 + strspn(v + n + 1, "0123456789");
    n = n < sizeof t->label - 3 ? n : sizeof t->label - 3;
    memcpy(t->label, "pt", 2);
    memcpy(t->label + 2, v, n);
    t->label[2 + n] = 0;
}

/* Starts `python script` with LD_LIBRARY_PATH=libdir (NULL: the environment as it is);
 * false, with a line on stderr naming `who`, when PyTorch does not answer. */
static inline bool bench_torch_start(struct bench_torch *t, const char *python, const char *script,
                                     const char *libdir, const char *who)
{
    int in[2], out[2];
    memset(t, 0, sizeof *t);
    t->who = who;
    /* close-on-exec: a later child must not hold this one's stdin open */
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
        return false;
    t->pid = fork();
    if (t->pid < 0)
        return false;
    if (t->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        if (libdir)
            setenv("LD_LIBRARY_PATH", libdir, 1);
        execl(python, python, script, (char *)NULL);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    t->req = fdopen(in[1], "w");
    t->ans = fdopen(out[0], "r");
    if (!t->req || !t->ans || !fgets(t->version, sizeof t->version, t->ans) ||
        strncmp(t->version, "torch ", 6) != 0) {
        fprintf(stderr, "%s: no PyTorch from %s %s%s%s\n", who, python, script,
                libdir ? " with LD_LIBRARY_PATH=" : "", libdir ? libdir : "");
        if (t->req)
            fclose(t->req);
        if (t->ans)
            fclose(t->ans);
        waitpid(t->pid, NULL, 0);
        t->req = t->ans = NULL;
        return false;
    }
    t->version[strcspn(t->version, "\n")] = 0;
    bench_torch_label(t);
    return true;
}

/* The child's next answer into line (its newline cut); a child that stopped answering ends
 * the benchmark (exit 2). */
static inline void bench_torch_answer(struct bench_torch *t, char *line, size_t len)
{
    if (!fgets(line, (int)len, t->ans)) {
        fprintf(stderr, "%s: the PyTorch child stopped answering\n", t->who);
        exit(2);
    }
    line[strcspn(line, "\n")] = 0;
}

/* The median seconds of one training step of the child's case KEY on `threads` threads, of
 * reps steps after warmup. */
static inline double bench_torch_time(struct bench_torch *t, const char *key, int threads,
                                      int warmup, int reps)
{
    fprintf(t->req, "step %s %d %d %d\n", key, threads, warmup, reps);
    fflush(t->req);
    char line[64];
    bench_torch_answer(t, line, sizeof line);
    return strtod(line, NULL);
}

/* Frees the child's case KEY. */
static inline void bench_torch_drop(struct bench_torch *t, const char *key)
{
    fprintf(t->req, "drop %s\n", key);
    fflush(t->req);
    char line[64];
    bench_torch_answer(t, line, sizeof line);
}

/* Ends the child: closing its stdin ends its loop. */
static inline void bench_torch_stop(struct bench_torch *t)
{
    if (!t->req)
        return;
    fclose(t->req);
    fclose(t->ans);
    waitpid(t->pid, NULL, 0);
    t->req = t->ans = NULL;
}

#endif
