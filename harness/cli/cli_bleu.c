/* harness/cli/cli_bleu.c — `pipebench bleu --hyp FILE --ref FILE [--merge-bpe]`: the
 * corpus BLEU of a file of translations against its reference (workloads/bleu/bleu.h),
 * printed as sacreBLEU prints it. */
#include <stdio.h>
#include <string.h>

#include "harness/cli/cli.h"
#include "workloads/bleu/bleu.h"

static const char usage[] =
    "usage: pipebench bleu --hyp FILE --ref FILE [--merge-bpe]\n"
    "Corpus BLEU of the hypotheses in FILE (one segment a line, UTF-8) against the\n"
    "references line by line, as sacreBLEU's corpus_bleu with its defaults: 13a\n"
    "tokenisation of both sides, case kept, 4-grams, brevity penalty, 'exp' smoothing.\n"
    "Prints the score, the 1..4-gram precisions (%), the brevity penalty, the length\n"
    "ratio and the hypothesis and reference lengths in tokens.\n"
    "  --hyp FILE    the system's output\n"
    "  --ref FILE    the reference, line-aligned with it\n"
    "  --merge-bpe   undo BPE joins on both sides first (every \"@@ \", then \"@@\",\n"
    "                removed, as the MLPerf GNMT reference does)\n";

int pb_cmd_bleu(int argc, char **argv)
{
    const char *hyp = NULL, *ref = NULL;
    bool merge = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return PB_EXIT_OK;
        }
        if (!strcmp(a, "--hyp") && v) {
            hyp = argv[++i];
        } else if (!strcmp(a, "--ref") && v) {
            ref = argv[++i];
        } else if (!strcmp(a, "--merge-bpe")) {
            merge = true;
        } else {
            fprintf(stderr, "pipebench: bleu: unexpected argument '%s'%s\n%s", a,
                    a[0] == '-' && !v ? " (or a missing value)" : "", usage);
            return PB_EXIT_USAGE;
        }
    }
    if (!hyp || !ref) {
        fprintf(stderr, "pipebench: bleu needs both --hyp FILE and --ref FILE\n%s", usage);
        return PB_EXIT_USAGE;
    }
    struct pb_bleu b;
    struct pb_err e;
    if (pb_bleu_score_files(hyp, ref, merge, &b, &e))
        return pb_cli_fail(e.msg);
    struct pb_bleu_score s;
    pb_bleu_score(&b, &s);
    char line[512];
    pb_bleu_format(&s, merge, line, sizeof line);
    printf("%s\n", line);
    return PB_EXIT_OK;
}
