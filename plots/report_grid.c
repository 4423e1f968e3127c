/* plots/report_grid.c — report tables (report_grid.h) and their rendering as Markdown
 * with padded columns and RFC 4180 CSV (LaTeX: report_latex.c); "–" marks absent cells
 * and "±" separates a mean from its standard deviation. */
#include "plots/report_grid.h"

#include <stdlib.h>
#include <string.h>

#include "harness/base/err.h"

#define ABSENT "\xe2\x80\x93"   /* – */

const char *const pb_report_format_names[PB_FORMAT_N] = {"md", "csv", "latex"};

void pb_grid_init(struct pb_grid *g, int ncols, int nlabels, const char *caption)
{
    memset(g, 0, sizeof *g);
    g->ncols = ncols;
    g->nlabels = nlabels;
    g->caption = caption;
}

void pb_grid_finish(struct pb_grid *g)
{
    for (int i = 0; i < g->nrows * g->ncols; i++) {
        free(g->cells[i]);
        free(g->notes[i]);
    }
    free(g->cells);
    free(g->notes);
    free(g->best);
    memset(g, 0, sizeof *g);
}

int pb_grid_add_row(struct pb_grid *g)
{
    if (g->nrows == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 16;
        size_t n = (size_t)g->cap * g->ncols;
        g->cells = realloc(g->cells, n * sizeof *g->cells);
        g->notes = realloc(g->notes, n * sizeof *g->notes);
        g->best = realloc(g->best, n * sizeof *g->best);
        PB_CHECK(g->cells && g->notes && g->best);
    }
    for (int j = 0; j < g->ncols; j++) {
        g->cells[(size_t)g->nrows * g->ncols + j] = NULL;
        g->notes[(size_t)g->nrows * g->ncols + j] = NULL;
        g->best[(size_t)g->nrows * g->ncols + j] = false;
    }
    return g->nrows++;
}

void pb_grid_set(struct pb_grid *g, int row, int col, const char *text, bool best)
{
    PB_CHECK(row >= 0 && row < g->nrows && col >= 0 && col < g->ncols);
    size_t i = (size_t)row * g->ncols + col;
    free(g->cells[i]);
    g->cells[i] = text ? pb_xstrdup(text) : NULL;
    g->best[i] = best;
}

void pb_grid_note(struct pb_grid *g, int row, int col, const char *note)
{
    PB_CHECK(row >= 0 && row < g->nrows && col >= 0 && col < g->ncols);
    size_t i = (size_t)row * g->ncols + col;
    free(g->notes[i]);
    g->notes[i] = note ? pb_xstrdup(note) : NULL;
}

static const char *note(const struct pb_grid *g, int r, int c)
{
    const char *t = g->notes[(size_t)r * g->ncols + c];
    return t ? t : "";
}

static const char *cell(const struct pb_grid *g, int r, int c)
{
    const char *t = g->cells[(size_t)r * g->ncols + c];
    return t ? t : ABSENT;
}

static bool is_best(const struct pb_grid *g, int r, int c)
{
    return g->best[(size_t)r * g->ncols + c];
}

/* Display width in Markdown: UTF-8 code points, '|' escaped as two. */
static int width(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += (((unsigned char)*s & 0xc0) != 0x80) + (*s == '|');
    return n;
}

static void md_text(const char *s, FILE *out)
{
    for (; *s; s++)
        fputs(*s == '|' ? "\\|" : (char[]){*s, 0}, out);
}

static void write_md(const struct pb_grid *g, FILE *out)
{
    int *w = pb_xcalloc((size_t)g->ncols, sizeof *w);
    for (int r = 0; r < g->nrows; r++)
        for (int c = 0; c < g->ncols; c++) {
            int n = width(cell(g, r, c)) + width(note(g, r, c)) + (is_best(g, r, c) ? 4 : 0);
            if (n > w[c])
                w[c] = n;
        }
    if (g->caption)
        fprintf(out, "%s\n\n", g->caption);
    for (int r = 0; r < g->nrows; r++) {
        for (int c = 0; c < g->ncols; c++) {
            const char *t = cell(g, r, c);
            bool b = is_best(g, r, c);
            const char *n = note(g, r, c);
            int pad = w[c] - width(t) - width(n) - (b ? 4 : 0);
            bool right = c >= g->nlabels && r > 0;
            fprintf(out, "| %*s%s", right ? pad : 0, "", b ? "**" : "");
            md_text(t, out);
            fputs(b ? "**" : "", out);
            md_text(n, out);
            fprintf(out, "%*s ", right ? 0 : pad, "");
        }
        fputs("|\n", out);
        if (r == 0) {
            for (int c = 0; c < g->ncols; c++) {
                fputs(c >= g->nlabels ? "| " : "|:", out);
                for (int k = 0; k < w[c]; k++)
                    fputc('-', out);
                fputs(c >= g->nlabels ? ":" : " ", out);
            }
            fputs("|\n", out);
        }
    }
    free(w);
}

static void write_csv(const struct pb_grid *g, FILE *out)
{
    for (int r = 0; r < g->nrows; r++)
        for (int c = 0; c < g->ncols; c++) {
            char *t = pb_xmalloc(strlen(cell(g, r, c)) + strlen(note(g, r, c)) + 2);
            sprintf(t, "%s%s%s", cell(g, r, c), is_best(g, r, c) ? "*" : "", note(g, r, c));
            if (strpbrk(t, ",\"\n\r")) {
                fputc('"', out);
                for (const char *p = t; *p; p++)
                    fputs(*p == '"' ? "\"\"" : (char[]){*p, 0}, out);
                fputc('"', out);
            } else {
                fputs(t, out);
            }
            free(t);
            fputs(c == g->ncols - 1 ? "\n" : ",", out);
        }
}

int pb_grid_write(const struct pb_grid *g, enum pb_report_format f, FILE *out)
{
    PB_CHECK(f >= 0 && f < PB_FORMAT_N && g->nrows > 0);
    if (f == PB_FORMAT_MD)
        write_md(g, out);
    else if (f == PB_FORMAT_CSV)
        write_csv(g, out);
    else
        pb_grid_write_latex(g, out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
