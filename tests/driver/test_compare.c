/* tests/driver/test_compare.c — `pipebench compare` through the built binary on a tiny
 * configuration: the comparison tables hold one row per run, the runs are in the
 * database, the figures are drawn; bad input is refused before anything runs; with
 * --executor mpi (the slow cases) each configuration runs under mpirun, and a Ctrl-C
 * stops it at its epoch boundary. */
#include "pb_config.h"
#include "tests/support/cli_util.h"
#include "tests/support/proc_util.h"

#include "plots/plot.h"

static char dir[64], out[1 << 16];

/* Whether dir/name is a PNG file. */
static bool is_png(const char *name)
{
    char path[512];
    unsigned char magic[8] = {0};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return n == 8 && !memcmp(magic, "\x89PNG\r\n\x1a\n", 8);
}

START_TEST(tiny_compare)
{
    cli_scratch(dir, sizeof dir, "compare");
    int rc = cli_run(dir, out, sizeof out, "compare --schedules pipedream,gpipe --optimizers "
                     "sgdm --limit-train 640 --limit-val 320 --microbatch-size 32 --epochs 1 "
                     "--model mlp --db c.db --out figs");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "compare: 2 runs of mlp on fashion-mnist, D = 4, 1 epoch;"), "%s",
                  out);
    /* header and one row per schedule in each table */
    const char *speed = strstr(out, "Convergence and speed");
    const char *memory = strstr(out, "Peak memory by kind");
    ck_assert_msg(speed && memory && speed < memory, "%s", out);
    ck_assert_msg(strstr(speed, "best acc") && strstr(speed, "samples/s") &&
                  strstr(speed, "range") && strstr(speed, "bubble") && strstr(speed, "F lag"),
                  "%s", out);
    /* 4 stage threads on fewer cores share them: their timings carry a dagger, explained */
    bool shared = 4 > sysconf(_SC_NPROCESSORS_ONLN);
    const char *legend = "\xe2\x80\xa0: measured with the stages sharing cores";
    ck_assert_msg(!strstr(speed, legend) == !shared && !strstr(speed, "%\xe2\x80\xa0") == !shared,
                  "shared %d: %s", shared, out);
    const char *p1 = strstr(speed, "  pipedream  sgdm "), *p2 = strstr(speed, "  gpipe      sgdm ");
    ck_assert_msg(p1 && p2 && p1 < p2 && p2 < memory, "%s", out);
    ck_assert_msg(strstr(memory, "params") && strstr(memory, "wcopies") &&
                  strstr(memory, "  pipedream  sgdm ") && strstr(memory, "  gpipe      sgdm "),
                  "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "c.db", "SELECT count(*) FROM runs WHERE status = 'done' "
                                              "AND optimizer = 'sgdm' AND model = 'mlp'"), 2);
    ck_assert_int_eq(cli_db_int(dir, "c.db", "SELECT count(*) FROM runs WHERE schedule IN "
                                              "('pipedream', 'gpipe')"), 2);
    ck_assert_msg(strstr(out, "figures for sgdm: figs/sgdm/"), "%s", out);
    for (int i = 0; pb_plot_figure_names[i]; i++) {
        char png[128];
        snprintf(png, sizeof png, "figs/sgdm/%s.png", pb_plot_figure_names[i]);
        ck_assert_msg(is_png(png), "%s missing: %s", png, out);
    }
    cli_cleanup(dir);
}
END_TEST

START_TEST(diverged_runs_reported)
{
    cli_scratch(dir, sizeof dir, "compare");
    int rc = cli_run(dir, out, sizeof out, "compare --schedules pipedream,gpipe --optimizers "
                     "sgdm --limit-train 640 --limit-val 320 --microbatch-size 32 --epochs 2 "
                     "--model mlp --lr 1e6 --db d.db --out figs");
    ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "[2/2] gpipe sgdm: diverged"), "the second run did not run: %s",
                  out);
    const char *speed = strstr(out, "Convergence and speed");
    ck_assert_msg(speed && strstr(speed, "pipedream  sgdm         1  diverged") &&
                  strstr(speed, "gpipe      sgdm         2  diverged"), "%s", out);
    ck_assert_msg(strstr(out, "figures for sgdm: none, no run finished"), "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "d.db", "SELECT count(*) FROM runs WHERE status = "
                                              "'diverged'"), 2);
    cli_cleanup(dir);
}
END_TEST

/* Equal footing (semantics §1.5): compare's default --batch 64 gives gpipe 4 micro-batches
 * of 16 and pipedream one of 64 per update: the same 10 updates of 64 samples in an epoch
 * of 640, in the table and in the database. A second compare reruns nothing and shows
 * the recorded runs; --force runs them again. */
START_TEST(equal_footing_and_resume)
{
    cli_scratch(dir, sizeof dir, "compare");
    static const char args[] = "compare --optimizers sgdm --limit-train 640 --limit-val 320 --epochs 1 --model mlp "
                               "--db e.db --out figs";
    int rc = cli_run(dir, out, sizeof out, "%s --schedules pipedream,gpipe", args);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "samples/upd  upd/epoch"), "%s", out);
    ck_assert_msg(strstr(out, "  pipedream  sgdm         1    done           64         10 ") &&
                  strstr(out, "  gpipe      sgdm         2    done           64         10 "),
                  "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "e.db", "SELECT microbatch_size FROM runs WHERE schedule = "
                                              "'gpipe'"), 16);
    ck_assert_int_eq(cli_db_int(dir, "e.db", "SELECT microbatch_size FROM runs WHERE schedule = "
                                              "'pipedream'"), 64);
    ck_assert_int_eq(cli_db_int(dir, "e.db", "SELECT count(*) FROM runs WHERE samples_per_update "
                                              "= 64 AND updates_per_epoch = 10"), 2);
    /* the same configuration identity: one row of the report, a column each */
    ck_assert_int_eq(cli_run(dir, out, sizeof out, "report --db e.db --table accuracy"), 0);
    ck_assert_msg(!strstr(out, "setting") && strstr(out, "pipedream") && strstr(out, "gpipe"),
                  "%s", out);

    rc = cli_run(dir, out, sizeof out, "%s --schedules pipedream,gpipe", args);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "2 of them finished already") &&
                  strstr(out, "  gpipe      sgdm         2    done"), "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "e.db", "SELECT count(*) FROM runs"), 2);
    rc = cli_run(dir, out, sizeof out, "%s --schedules gpipe,pipedream --force", args);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "e.db", "SELECT count(*) FROM runs"), 4);
    /* another configuration (here: --microbatch-size's meaning of today) is run */
    rc = cli_run(dir, out, sizeof out, "%s --schedules gpipe --microbatch-size 64", args);
    ck_assert_msg(rc == 0 && !strstr(out, "finished already"), "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "e.db", "SELECT samples_per_update FROM runs WHERE id = 5"),
                     256);
    ck_assert_int_eq(cli_db_int(dir, "e.db", "SELECT updates_per_epoch FROM runs WHERE id = 5"),
                     3);
    cli_cleanup(dir);
}
END_TEST

/* --executor mpi (slow; only in a build with MPI): each configuration runs under mpirun,
 * 2 ranks each, recorded with executor mpi in the comparison; a second compare finds them
 * finished and runs nothing. */
START_TEST(mpi_compare)
{
    if (!PB_HAVE_MPI)   /* a build without MPI refuses the executor (test_bad_inputs) */
        return;
    cli_scratch(dir, sizeof dir, "compare");
    static const char args[] = "compare --schedules gpipe,pipedream --optimizers sgdm "
                               "--executor mpi --stages 2 --model mlp --limit-train 320 "
                               "--limit-val 160 --epochs 2 --threads 2 --db m.db --out figs";
    int rc = cli_run(dir, out, sizeof out, "%s", args);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "compare: 2 runs of mlp on fashion-mnist, D = 2, 2 epochs;"), "%s",
                  out);
    const char *speed = strstr(out, "Convergence and speed");
    ck_assert_msg(speed && strstr(speed, "  gpipe      sgdm ") &&
                  strstr(speed, "  pipedream  sgdm "), "%s", out);
    ck_assert_int_eq(cli_db_int(dir, "m.db", "SELECT count(*) FROM runs WHERE status = 'done' "
                                              "AND executor = 'mpi' AND stages = 2 AND "
                                              "schedule IN ('gpipe', 'pipedream') AND model = "
                                              "'mlp' AND epochs = 2"), 2);
    ck_assert_int_eq(cli_db_int(dir, "m.db", "SELECT count(*) FROM epochs"), 4);
    rc = cli_run(dir, out, sizeof out, "%s", args);
    ck_assert_msg(rc == 0 && strstr(out, "2 of them finished already"), "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "m.db", "SELECT count(*) FROM runs"), 2);
    cli_cleanup(dir);
}
END_TEST

/* A Ctrl-C to an mpi compare (slow; MPI builds): the running configuration's ranks stop
 * at their epoch boundary and record it interrupted with its resume state, the next is
 * not started, exit 130; compare run again runs both to the end (compare takes no claims
 * and resumes nothing: the interrupted run stays, `pipebench resume` its way on). 40
 * epochs, as test_sweep's mpi case: fewer can end before the signal on a quiet machine. */
START_TEST(mpi_compare_interrupted)
{
    if (!PB_HAVE_MPI)
        return;
    cli_scratch(dir, sizeof dir, "compare");
    static const char args[] = "compare --schedules gpipe,pipedream --optimizers sgdm "
                               "--executor mpi --stages 2 --model mlp --limit-train 2000 "
                               "--limit-val 320 --microbatch-size 32 --epochs 40 --threads 2 "
                               "--db i.db --out figs";
    static struct proc p;
    proc_start(&p, dir, args);
    ck_assert_msg(proc_wait_for(&p, "[1/2] gpipe sgdm: started", 1), "%s", p.log);
    int epochs = 0;
    for (int i = 0; i < 1200 && epochs < 1; i++) {
        usleep(50000);
        epochs = cli_db_int(dir, "i.db", "SELECT count(*) FROM epochs");
    }
    ck_assert_int_ge(epochs, 1);
    proc_signal(&p, SIGINT);
    int rc = proc_finish(&p);
    ck_assert_msg(rc == 130, "exit %d: %s", rc, p.log);
    ck_assert_int_eq(cli_db_int(dir, "i.db", "SELECT count(*) FROM runs WHERE status = "
                                              "'interrupted' AND executor = 'mpi' AND schedule "
                                              "= 'gpipe' AND message LIKE '%its resume state "
                                              "is written: `mpirun -np 2 pipebench resume 1`%'"),
                     1);
    ck_assert_int_eq(cli_db_int(dir, "i.db", "SELECT count(*) FROM runs"), 1);
    rc = cli_run(dir, out, sizeof out, "%s", args);
    ck_assert_msg(rc == 0 && !strstr(out, "finished already"), "exit %d: %s", rc, out);
    ck_assert_int_eq(cli_db_int(dir, "i.db", "SELECT count(*) FROM runs WHERE status = 'done' "
                                              "AND executor = 'mpi'"), 2);
    ck_assert_int_eq(cli_db_int(dir, "i.db", "SELECT count(*) FROM runs"), 3);
    cli_cleanup(dir);
}
END_TEST

/* Exit status 2 with the fragment in the message; nothing ran. */
static void expect_bad(const char *args, const char *fragment)
{
    int rc = cli_run(dir, out, sizeof out, "compare --db bad.db --out figs %s", args);
    ck_assert_msg(rc == 2, "%s: exit %d: %s", args, rc, out);
    ck_assert_msg(strstr(out, fragment), "%s: no '%s' in: %s", args, fragment, out);
    ck_assert_int_eq(cli_db_int(dir, "bad.db", "SELECT count(*) FROM runs"), 0);
}

START_TEST(bad_input)
{
    cli_scratch(dir, sizeof dir, "compare");
    expect_bad("--schedules pipedream,nope", "unknown schedule 'nope'");
    expect_bad("--optimizers sgdm,lion", "--optimizers: ");
    expect_bad("--schedules gpipe,gpipe", "'gpipe' is listed twice");
    expect_bad("--schedules spectrain --optimizers adam", "no schedule in --schedules can run");
    expect_bad("--schedule gpipe", "use --schedules");
    expect_bad("--target 80", "--target is a fraction");
    expect_bad("--epochs 0", "--epochs must be between 1 and");
    expect_bad("--bogus", "unknown option");
    expect_bad("--schedules gpipe --batch 30", "--batch 30 does not split into the 4 micro-batches");
    expect_bad("--schedules gpipe --batch 64 --microbatch-size 32", "disagree");
    expect_bad("--schedules pipedream --batch 0", "--batch counts samples per update");
    expect_bad("--schedules pipedream --limit-train 100 --batch 128",
               "100 training samples make no batch of 128");
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("compare");
    TCase *tc = tcase_create("compare");
    tcase_set_tags(tc, "fast");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, tiny_compare);
    tcase_add_test(tc, diverged_runs_reported);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    TCase *footing = tcase_create("footing");
    tcase_set_timeout(footing, 600);
    tcase_add_test(footing, equal_footing_and_resume);
    suite_add_tcase(s, footing);
    TCase *mpi = tcase_create("mpi");
    tcase_set_timeout(mpi, 600);
    tcase_add_test(mpi, mpi_compare);
    tcase_add_test(mpi, mpi_compare_interrupted);
    suite_add_tcase(s, mpi);
    return s;
}
