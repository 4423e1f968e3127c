/* results/gen_embed.c — build-time tool: embeds a text file (results/schema.sql) into
 * the library as `const char NAME[]`, so the SQL lives in one place.
 * Usage: gen_embed NAME INPUT OUTPUT.c */
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s NAME INPUT OUTPUT.c\n", argv[0]);
        return 2;
    }
    FILE *in = fopen(argv[2], "rb");
    if (!in) {
        perror(argv[2]);
        return 1;
    }
    FILE *out = fopen(argv[3], "w");
    if (!out) {
        perror(argv[3]);
        fclose(in);
        return 1;
    }
    fprintf(out, "/* Generated from %s by gen_embed; do not edit. */\nconst char %s[] =\n\"",
            argv[2], argv[1]);
    int c;
    while ((c = fgetc(in)) != EOF) {
        if (c == '\n')
            fputs("\\n\"\n\"", out);
        else if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f || c == '?')
            fprintf(out, "\\%03o", c);
        else
            fputc(c, out);
    }
    fputs("\";\n", out);
    fclose(in);
    int rc = ferror(out) | fclose(out);
    if (rc) {
        perror(argv[3]);
        return 1;
    }
    return 0;
}
