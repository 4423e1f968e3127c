/* tests/support/bleu_fixtures.h — the BLEU fixtures of tests/fixtures/bleu/ (fixtures_bleu.py,
 * fixtures_detok.py) for the tests of workloads/evaluation/bleu/: their paths and their lines. */
#ifndef PB_TESTS_BLEU_FIXTURES_H
#define PB_TESTS_BLEU_FIXTURES_H

/* $PB_FIXTURES/bleu/name (tests/fixtures without it), in one of four static buffers used
 * in turn, so up to four paths may be held at once. */
char *fixture_path(const char *name);

/* The lines of the fixture `name` (each '\n' cut; the file must end with one), *n of
 * them, pointing into *text; free(*text) and the array. */
char **read_lines(const char *name, int *n, char **text);

#endif
