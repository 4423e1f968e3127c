/* harness/cli/cli_bleu.c — `pipebench bleu --hyp FILE --ref FILE [--merge-bpe] [--detok
 * en|de] [--tokenize 13a|intl] [--lowercase]`: the
 * corpus BLEU of a file of translations against its reference (workloads/evaluation/bleu/bleu.h),
 * printed as sacreBLEU prints it. */
#include <stdio.h>
#include <string.h>

#include "harness/cli/cli.h"
#include "workloads/evaluation/bleu/bleu.h"

static const char usage[] =
    "usage: pipebench bleu --hyp FILE --ref FILE [--merge-bpe] [--detok en|de]\n"
    "                      [--tokenize 13a|intl] [--lowercase]\n"
    "Corpus BLEU of the hypotheses in FILE (one segment a line, UTF-8) against the\n"
    "references line by line, as sacreBLEU's corpus_bleu with its defaults: 13a\n"
    "tokenisation of both sides, case kept, 4-grams, brevity penalty, 'exp' smoothing.\n"
    "Prints the score, the 1..4-gram precisions (%), the brevity penalty, the length\n"
    "ratio and the hypothesis and reference lengths in tokens.\n"
    "  --hyp FILE    the system's output\n"
    "  --ref FILE    the reference, line-aligned with it\n"
    "  --merge-bpe   undo BPE joins on both sides first (every \"@@ \", then \"@@\",\n"
    "                removed, as the MLPerf GNMT reference does)\n"
    "  --detok LANG  Moses-detokenise the hypotheses (after the merge) with LANG's rules,\n"
    "                en or de, to score them against a raw reference\n"
    "  --tokenize T  sacreBLEU's tokeniser: 13a (default) or intl\n"
    "  --lowercase   lowercase both sides (sacreBLEU's -lc)\n"
    "The MLPerf GNMT reference's score of BPE output against the raw newstest2014.de:\n"
    "  --merge-bpe --detok en --tokenize intl --lowercase\n";

int pb_cmd_bleu(int argc, char **argv)
{
    const char *hyp = NULL, *ref = NULL;
    struct pb_bleu_opts o = {0};
    struct pb_err e;
    int tok_given = 0;
    if (pb_cli_once("bleu", argc, argv, NULL, NULL))
        return PB_EXIT_USAGE;
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
            o.merge_bpe = true;
        } else if (!strcmp(a, "--lowercase") || !strcmp(a, "-lc")) {
            o.lowercase = true;
        } else if (!strcmp(a, "--detok") && v) {
            if (pb_detok_lang_parse(argv[++i], &o.detok, &e))
                return pb_cli_fail(e.msg);
        } else if ((!strcmp(a, "--tokenize") || !strcmp(a, "-tok")) && v) {
            if (tok_given++) {   /* -tok is sacreBLEU's name of it, which pb_cli_once misses */
                fprintf(stderr, "pipebench bleu: --tokenize is given twice; give it once (-tok "
                                "is its other name; a later value would silently replace the "
                                "earlier)\n");
                return PB_EXIT_USAGE;
            }
            if (pb_bleu_tok_parse(argv[++i], &o.tok, &e))
                return pb_cli_fail(e.msg);
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
    if (pb_bleu_score_files_opts(hyp, ref, &o, &b, &e))
        return pb_cli_fail(e.msg);
    struct pb_bleu_score s;
    pb_bleu_score(&b, &s);
    char line[512];
    pb_bleu_format_opts(&s, &o, line, sizeof line);
    printf("%s\n", line);
    return PB_EXIT_OK;
}
