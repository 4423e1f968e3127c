/* plots/report_latex.c — a report table as LaTeX a paper can \input as it is: a float
 * with placement [tbp], \caption and \label, booktabs' rules where the document loads
 * booktabs (\hline otherwise), a table too wide for a column set as table* and shrunk
 * to the line where it would still overflow (graphicx's \resizebox), and the cells'
 * notes ("n = 2; epochs ...") moved out of the number cells into footnotes below the
 * table: one line when every cell has the same note, else a letter per distinct note. */
#include "plots/report_grid.h"

#include <stdlib.h>
#include <string.h>

#include "harness/base/err.h"

#define ABSENT "\xe2\x80\x93"   /* – */

/* A column of a two-column article holds about this many characters of table text. */
#define COLUMN_CHARS 45

static const char *at(char *const *v, const struct pb_grid *g, int r, int c)
{
    return v[(size_t)r * g->ncols + c];
}

/* UTF-8 sequences the report writes and their LaTeX (text mode). */
static const struct {
    const char *utf8, *tex;
} specials[] = {
    {"\xc2\xb1", "$\\pm$"},          /* ± */
    {ABSENT, "--"},                  /* – */
    {"\xe2\x80\x94", "---"},         /* — */
    {"\xe2\x80\xa0", "$^\\dagger$"}, /* † */
    {"\xc2\xa7", "\\S{}"},           /* § */
    {"\xc3\x97", "$\\times$"},       /* × */
    {"\xe2\x89\xa5", "$\\geq$"},     /* ≥ */
    {"\xe2\x89\xa4", "$\\leq$"},     /* ≤ */
    {"\xce\xbc", "$\\mu$"},          /* μ */
};

/* LaTeX text: the specials above, and TeX's own characters escaped. */
static void latex_text(const char *t, FILE *out)
{
    for (const char *p = t; *p; p++) {
        size_t k = 0, n = sizeof specials / sizeof *specials;
        while (k < n && strncmp(p, specials[k].utf8, strlen(specials[k].utf8)))
            k++;
        if (k < n) {
            fputs(specials[k].tex, out);
            p += strlen(specials[k].utf8) - 1;
        } else if (strchr("&%$#_{}", *p)) {
            fprintf(out, "\\%c", *p);
        } else if (*p == '~') {
            fputs("\\textasciitilde{}", out);
        } else if (*p == '^') {
            fputs("\\textasciicircum{}", out);
        } else if (*p == '\\') {
            fputs("\\textbackslash{}", out);
        } else {
            fputc(*p, out);
        }
    }
}

/* A note without its wrapping " (" and ")": "n = 2; epochs 1–3". */
static void note_text(const char *note, char *buf, size_t cap)
{
    while (*note == ' ')
        note++;
    size_t len = strlen(note);
    if (len >= 2 && note[0] == '(' && note[len - 1] == ')')
        snprintf(buf, cap, "%.*s", (int)(len - 2), note + 1);
    else
        snprintf(buf, cap, "%s", note);
}

/* The distinct notes in the order met, and each cell's index among them (-1: none). */
struct notes {
    char **text;
    int n, *of;
    bool every;   /* one note, on every value cell that has a value */
};

static void collect_notes(const struct pb_grid *g, struct notes *ns)
{
    ns->text = pb_xcalloc((size_t)g->nrows * g->ncols + 1, sizeof *ns->text);
    ns->of = pb_xcalloc((size_t)g->nrows * g->ncols + 1, sizeof *ns->of);
    ns->n = 0;
    ns->every = true;
    for (int r = 0; r < g->nrows; r++)
        for (int c = 0; c < g->ncols; c++) {
            const char *t = at(g->notes, g, r, c);
            int *of = &ns->of[(size_t)r * g->ncols + c];
            *of = -1;
            if (!t || !*t) {
                ns->every &= r == 0 || c < g->nlabels || !at(g->cells, g, r, c);
                continue;
            }
            char buf[512];
            note_text(t, buf, sizeof buf);
            int k = 0;
            while (k < ns->n && strcmp(ns->text[k], buf))
                k++;
            if (k == ns->n)
                ns->text[ns->n++] = pb_xstrdup(buf);
            *of = k;
        }
    ns->every &= ns->n == 1;
}

static void free_notes(struct notes *ns)
{
    for (int k = 0; k < ns->n; k++)
        free(ns->text[k]);
    free(ns->text);
    free(ns->of);
}

/* "a" ... "z", "aa", "ab" ...: the mark of note k. */
static void mark(int k, char *buf, size_t cap)
{
    if (k < 26)
        snprintf(buf, cap, "%c", 'a' + k);
    else
        snprintf(buf, cap, "%c%c", 'a' + k / 26 - 1, 'a' + k % 26);
}

/* About how many characters wide the table is set: each column's widest cell (notes
 * left out, they go below) and the space between columns. */
static int text_width(const struct pb_grid *g)
{
    int total = 0;
    for (int c = 0; c < g->ncols; c++) {
        int w = 0;
        for (int r = 0; r < g->nrows; r++) {
            const char *t = at(g->cells, g, r, c);
            int n = 0;
            for (; t && *t; t++)
                n += ((unsigned char)*t & 0xc0) != 0x80;
            w = n > w ? n : w;
        }
        total += w + 2;
    }
    return total;
}

void pb_grid_write_latex(const struct pb_grid *g, FILE *out)
{
    struct notes ns;
    collect_notes(g, &ns);
    bool wide = text_width(g) > COLUMN_CHARS;
    const char *env = wide ? "table*" : "table";
    fputs("% pipebench report: needs \\usepackage{graphicx}; booktabs' rules where the "
          "document loads booktabs\n", out);
    fprintf(out, "\\begin{%s}[tbp]\n\\centering\n", env);
    fputs("\\providecommand{\\toprule}{\\hline}\\providecommand{\\midrule}{\\hline}"
          "\\providecommand{\\bottomrule}{\\hline}\n", out);
    if (g->caption || g->latex_caption) {
        fputs("\\caption{", out);
        if (g->latex_caption)
            fputs(g->latex_caption, out);
        else
            latex_text(g->caption, out);
        fputs("}\n", out);
    }
    if (g->label)
        fprintf(out, "\\label{%s}\n", g->label);
    fputs("\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n", out);
    fputs("\\begin{tabular}{", out);
    for (int c = 0; c < g->ncols; c++)
        fputc(c < g->nlabels ? 'l' : 'r', out);
    fputs("}\n\\toprule\n", out);
    for (int r = 0; r < g->nrows; r++) {
        for (int c = 0; c < g->ncols; c++) {
            if (c)
                fputs(" & ", out);
            const char *t = at(g->cells, g, r, c);
            bool b = g->best[(size_t)r * g->ncols + c];
            if (b)
                fputs("\\textbf{", out);
            latex_text(t ? t : ABSENT, out);
            if (b)
                fputc('}', out);
            int k = ns.of[(size_t)r * g->ncols + c];
            if (k >= 0 && !ns.every) {
                char m[8];
                mark(k, m, sizeof m);
                fprintf(out, "$^{\\mathrm{%s}}$", m);
            }
        }
        fputs(" \\\\\n", out);
        if (r == 0)
            fputs("\\midrule\n", out);
    }
    fputs("\\bottomrule\n\\end{tabular}}\n", out);
    if (ns.n) {
        fputs("\\par\\smallskip{\\footnotesize\\raggedright\n", out);
        for (int k = 0; k < ns.n; k++) {
            char m[8];
            mark(k, m, sizeof m);
            if (ns.every)
                fputs("Every cell: ", out);
            else
                fprintf(out, "$^{\\mathrm{%s}}$\\,", m);
            latex_text(ns.text[k], out);
            fputs(k + 1 < ns.n ? ".\\quad\n" : ".\\par}\n", out);
        }
    }
    fprintf(out, "\\end{%s}\n", env);
    free_notes(&ns);
}
