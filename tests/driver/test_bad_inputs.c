/* tests/driver/test_bad_inputs.c — the table of bad inputs (README "Bad input"): every command
 * of the built binary, each given something wrong — an unknown name, an impossible
 * number, a missing, corrupt or misplaced file, a bad sweep file — must exit 2 with a
 * message saying what to do, and leave the scratch folder exactly as it was: the
 * results database byte for byte (one finished run, no row added, none left
 * `running`), no output file, no new folder. */
#include <ftw.h>
#include <sys/stat.h>
#include <stdint.h>

#include "pb_config.h"
#include "tests/support/cli_util.h"
#include "tests/support/gpu_sign.h"

/* One bad input: the arguments (run in the scratch folder) and up to two fragments the
 * message must hold — what is wrong and what to do. */
struct bad_input {
    const char *args;
    const char *what, *advice;
};

/* `pipebench run` on the tiny mlp, recording into the fixture's database; a case's own
 * options come last, so they override these. */
#define RUN "run --quiet --limit-train 256 --limit-val 64 --db runs.db "
#define DB " --db runs.db"

/* --backend cuda: unbuilt, or built and refused where no GPU is usable (where one is, the
 * backend is created and the case does not apply) */
#if PB_HAVE_CUDA
#define CUDA_REFUSED "no NVIDIA GPU or driver is usable here"
#else
#define CUDA_REFUSED "built without CUDA"
#endif

static const struct bad_input cases[] = {
    /* unknown names: the message lists the valid ones */
    {RUN "--schedule pipedreams", "unknown schedule 'pipedreams'", "valid schedules: gpipe"},
    {RUN "--model resnet", "unknown model 'resnet'", "valid models: mlp"},
    {RUN "--optimizer sgdx", "unknown optimizer 'sgdx'", "valid optimizers: sgd"},
    {RUN "--dataset mnistx", "unknown dataset 'mnistx'", "valid datasets: fashion-mnist"},
    {RUN "--schedule gpipe --variant code", "gpipe has no variants", "leave --variant out"},
    {RUN "--executor gpu", "unknown executor 'gpu'", "valid executors: seq"},
    {RUN "--backend foo", "unknown backend 'foo'", "valid backends: cpu"},
    {RUN "--backend cuda", CUDA_REFUSED, "--backend cpu"},
    {RUN "--tf32", "--tf32: the cpu backend computes in FP32 only", "--backend cuda"},
    {RUN "--model alexnet --preset huge", "no preset 'huge'", "its presets: paper, small"},
    {RUN "--model mlp --preset paper", "has no presets", "drop --preset paper"},
    {RUN "--model lenet --partition paper", "no paper partition", "--partition flops"},
    {RUN "--model lenet --partition foo", "--partition 'foo': expected a method",
     "e.g. 0,3,5,9"},
    {RUN "--model lenet --partition 0,3,2,9 --stages 3", "--partition", NULL},
    {RUN "--batch 0", "--batch counts samples per update", NULL},
    {RUN "--schedule gpipe --batch 66 --microbatches 4", "does not split into the 4 micro-batches",
     "give a multiple of 4 (64 or 68)"},
    {RUN "--schedule gpipe --batch 2 --microbatches 4", "--batch 2 is less than the 4",
     "give --batch 4 or more"},
    {RUN "--batch 64 --microbatch-size 32", "disagree", "give only one of the two"},
    {RUN "--stages 2 --devices 0,0,x", "'x' is not a device index", "--devices 0"},
    {RUN "--stages 2 --devices 0,,0", "an empty entry", "--devices 0"},
    {RUN "--stages 2 --devices -1", "device -1 is negative", "--devices 0"},
    {RUN "--stages 2 --devices 0,1,2", "more devices than stages", "give at most 2"},
    {RUN "--stages 2 --devices 0,1", "the cpu backend has one device, 0", "--devices 0"},
    {"compare --quiet --stages 2 --devices 0,0,0" DB, "more devices than stages",
     "give at most 2"},
    {RUN "--frobnicate", "unknown option", "pipebench run --help"},
    {"frobnicate", "unknown command 'frobnicate'", "valid commands: run"},
    {"list foo", "unexpected argument 'foo'", NULL},
    /* impossible numbers, each refused before anything is allocated */
    {RUN "--stages 0", "--stages must be at least 1", NULL},
    {RUN "--stages -3", "--stages must be at least 1", NULL},
    {RUN "--stages 2147483647", "--stages must be at most", NULL},
    {RUN "--model mlp --stages 64", "at most 8 stages", "--stages 64"},
    {RUN "--microbatches 0", "--microbatches must be at least 1", NULL},
    {RUN "--microbatches 2000000", "--microbatches must be between 1 and", NULL},
    {RUN "--microbatch-size 0", "--microbatch-size must be at least 1", NULL},
    {RUN "--microbatch-size abc", "--microbatch-size expects an integer", NULL},
    {RUN "--microbatch-size 12abc", "expects an integer (got '12abc')", NULL},
    {RUN "--microbatch-size 100000", "make no micro-batch of 100000", "lower --microbatch-size"},
    {RUN "--epochs 0", "--epochs must be between 1 and", NULL},
    {RUN "--epochs -1", "--epochs must be between 1 and", NULL},
    {RUN "--epochs 2147483647", "--epochs must be between 1 and 1000000", NULL},
    {RUN "--lr -0.1", "--lr must be > 0", NULL},
    {RUN "--lr nan", "--lr expects a number", NULL},
    {RUN "--lr 1e400", "--lr expects a number", NULL},
    {RUN "--lr inf", "--lr expects a number", NULL},
    {RUN "--lr", "missing value: '--lr'", "pipebench run --help"},
    {RUN "--momentum 1.5", "--momentum must be in [0, 1)", NULL},
    {RUN "--momentum -0.5", "--momentum must be in [0, 1)", NULL},
    {RUN "--dampening 2", "--dampening must be in [0, 1)", NULL},
    {RUN "--nesterov --momentum 0", "--nesterov requires --momentum > 0", NULL},
    {RUN "--weight-decay -1", "--weight-decay must be >= 0", NULL},
    {RUN "--optimizer adam --betas 0.9", "--betas expects 2 comma-separated numbers", NULL},
    {RUN "--optimizer adam --betas 0.9,1.0", "--beta2 must be in [0, 1)", NULL},
    {RUN "--optimizer adam --eps 0", "--eps", NULL},
    {RUN "--optimizer nadam --momentum-decay -0.1", "--momentum-decay must be >= 0", NULL},
    {RUN "--schedule pipeoptim --optimizer nadam", "nadam has no weight prediction",
     "a schedule that does not predict (pipedream"},
    {RUN "--schedule xpipe --optimizer nadam", "nadam has no weight prediction", NULL},
    {RUN "--lr-reschedule-epochs 3", "only pipemare reschedules it", "--schedule pipemare"},
    {RUN "--schedule pipemare --lr-reschedule-epochs -2", "--lr-reschedule-epochs counts epochs",
     NULL},
    {RUN "--schedule pipemare --variant vertical", "pipemare has no variants",
     "leave --variant out"},
    {RUN "--variant vertcal", "unknown variant 'vertcal'", "valid variants: vertical"},
    {RUN "--optimizer rmsprop --alpha 2", "--alpha must be in [0, 1)", NULL},
    {RUN "--label-smoothing 1.5", "--label-smoothing must be in [0, 1)", NULL},
    {RUN "--dataset synthetic --synthetic-noise 0", "--synthetic-noise must be above 0", "got 0"},
    {RUN "--dataset synthetic --synthetic-noise 11", "--synthetic-noise must be above 0", "got 11"},
    {RUN "--model lenet --dataset fashion-mnist --synthetic-noise 0.5",
     "--synthetic-noise: fashion-mnist is read from files", "add --dataset synthetic"},
    {RUN "--model residual-lstm --dataset synthetic --synthetic-noise 0.5",
     "--synthetic-noise: the stand-in of imdb is sequences of ids", "drop --synthetic-noise"},
    {"run --quiet --limit-val 64 --db runs.db --limit-train -5", "--limit-train and --limit-val must be >= 0", "0 = all"},
    {"run --quiet --limit-train 256 --db runs.db --limit-val 1000000", "the sample limit 1000000", "lower --limit-train or --limit-val"},
    {RUN "--beam -1", "--beam takes 0 (greedy decoding) or a beam width of 1 to 64", "got -1"},
    {RUN "--beam 65", "--beam takes 0", "got 65"},
    {RUN "--beam two", "--beam", "two"},
    {RUN "--threads 100000", "more than this machine's", "use --threads"},
    {RUN "--lr-steps 5,3", "--lr-steps must be strictly increasing", NULL},
    {RUN "--lr-steps x", "--lr-steps expects comma-separated integers", NULL},
    {RUN "--lr-steps 2 --lr-gamma -1", "--lr-gamma", NULL},
    {RUN "--lr-gamma -1", "--lr-gamma must be > 0", "(got -1)"},
    {RUN "--lr-gamma 0", "--lr-gamma must be > 0", "(got 0)"},
    {RUN "--epochs ' 1'", "--epochs expects an integer", "(got ' 1')"},
    {RUN "--epochs +1", "--epochs expects an integer", "(got '+1')"},
    {RUN "--trace-epochs 99999999999", "--trace-epochs: 99999999999 is out of range", NULL},
    {RUN "--checkpoint-every -2", "--checkpoint-every counts epochs", "0 for never"},
    {RUN "--shuffle maybe", "--shuffle expects on or off", NULL},
    {RUN "--seed -1", "--seed expects a non-negative integer", NULL},
    {RUN "--trace-epochs 0", "epoch 0 is not one of the run's epochs", NULL},
    {RUN "--trace-epochs foo", "--trace-epochs", "first, last or epoch numbers"},
    {RUN "--trace-window 5:2", "--trace-window A:B", "0 <= A < B"},
    {RUN "--experiment ''", "--experiment wants a name of 1 to 64 characters", NULL},
    {RUN "--experiment \"$(printf 'a\\377b')\"", "--experiment: the name is not valid UTF-8",
     "give a name in UTF-8"},
    {RUN "--repeat 0", "--repeat counts trainings of the configuration: between 1 and 1000",
     "(got 0)"},
    {RUN "--repeat -1", "--repeat counts trainings", "(got -1)"},
    {RUN "--repeat 1001", "--repeat counts trainings", "between 1 and 1000"},
    {RUN "--repeat 1000000000", "--repeat counts trainings", "between 1 and 1000"},
    {RUN "--repeat 1e9", "--repeat expects an integer", "(got '1e9')"},
    {RUN "--repeat three", "--repeat expects an integer", NULL},
    {RUN "--repeat 2.5", "--repeat expects an integer", NULL},
    {RUN "--repeat", "missing value: '--repeat'", "pipebench run --help"},
    {RUN "--repeat 2 --executor mpi", "--repeat 2 cannot run under --executor mpi",
     "use --executor threads"},
    /* files: missing, corrupt, of the wrong kind, in the wrong place */
    {RUN "--init missing.safetensors", "cannot open 'missing.safetensors'", NULL},
    {RUN "--init adir", "'adir' is not a file", "give its path"},
    {RUN "--init bad.safetensors", "not a safetensors file", NULL},
    {RUN "--model mlp --stages 2 --init flipped.safetensors",
     "'flipped.safetensors' is damaged: its tensor data do not match the checksum", NULL},
    {RUN "--model lenet --init w.safetensors", "is missing (the file holds", NULL},
    {RUN "--save nodir/x.safetensors", "cannot write nodir/x.safetensors",
     "give --save a path in a writable output folder"},
    /* output paths that would destroy something: checked before any work */
    {RUN "--save runs.db", "cannot write runs.db: it is the results database",
     "give --save another path"},
    {"run --quiet --limit-train 256 --limit-val 64 --db new.db --save ./new.db",
     "it is the results database (--db new.db)",
     "give --save another path"},
    {RUN "--save adir", "cannot write adir: it is a folder", "give --save the path of a file"},
    {RUN "--save fifo", "cannot write fifo: it is a FIFO", "give --save the path of a file"},
    {RUN "--save w.safetensors/x", "w.safetensors is not a folder", "writable output folder"},
    {"run --quiet --limit-train 256 --limit-val 64 --db adir", "cannot open the results database adir", "pass --db"},
    {"run --quiet --limit-train 256 --limit-val 64 --db bad.db", "file is not a database", "pass --db"},
    {RUN "--dataset fashion-mnist --data-dir nodir", "does not exist", "check the path"},
    {RUN "--dataset fashion-mnist --data-dir trunc", "the file is damaged", "re-download"},
    {RUN "--dataset fashion-mnist --data-dir badtrail", "the gzip trailer does not give",
     "re-download"},
    {RUN "--dataset fashion-mnist --data-dir fmfifo",
     "train-images-idx3-ubyte.gz is a FIFO, not a file", "re-download"},
    {RUN "--model alexnet --dataset cifar10 --data-dir cifardir",
     "data_batch_1.bin is a folder, not a batch file", "unpack cifar-10-binary.tar.gz again"},
    {RUN "--dataset synthetic --data-dir empty", "the synthetic dataset is generated",
     "drop --data-dir"},
    {RUN "--model alexnet --dataset cifar10 --data-dir empty", "cannot find data_batch_1.bin",
     "download cifar-10-binary.tar.gz"},
    {RUN "--model alexnet --dataset cifar100 --data-dir empty", "cannot find train.bin",
     "download cifar-100-binary.tar.gz"},
    {RUN "--model alexnet --dataset tiny-imagenet --data-dir empty", "cannot find wnids.txt",
     "download tiny-imagenet-200.zip"},
    {RUN "--model mlp --dataset imdb --data-dir empty", "imdb", "aclImdb"},
    {RUN "--schedule spectrain --optimizer adam", "runs with SGD or SGDM only",
     "use --optimizer sgdm"},
    {RUN "--model residual-lstm --dataset fashion-mnist", "takes sequences of 64 token ids",
     "the imdb dataset"},
    {RUN "--model residual-lstm --preset paper --dataset fashion-mnist",
     "(preset paper) takes sequences of 200 token ids", "the imdb dataset"},
    {"run --quiet --db runs.db --model gnmt8 --preset small --data-dir wmt16small --stages 2 "
     "--microbatch-size 2 --limit-train 0 --limit-val 0",
     "the vocabulary of wmt16small holds 24 tokens, fewer than the 256",
     "vocab.bpe.32000 holds at least 256 tokens"},
    {RUN "--model residual-lstm-small", "unknown model 'residual-lstm-small' (use --model "
     "residual-lstm --preset small)", "valid models: mlp"},
    /* compare */
    {"compare --quiet --schedules foo" DB, "unknown schedule 'foo'", "valid schedules"},
    {"compare --quiet --optimizers foo" DB, "unknown optimizer 'foo'", "valid optimizers"},
    {"compare --quiet --target 75" DB, "--target is a fraction", "for 80% write 0.80"},
    {"compare --quiet --target 1.5" DB, "--target is a fraction", NULL},
    {"compare --quiet --microbatches 1000000000" DB, "--microbatches must be between", NULL},
    {"compare --quiet --repeat 0" DB, "--repeat counts trainings", "between 1 and 1000"},
    {"compare --quiet --repeat x" DB, "--repeat expects an integer", NULL},
    {"compare --quiet --executor mpi --hostfile missing.hosts" DB,
     "cannot read the --hostfile missing.hosts", "mpirun's host file"},
    /* sweep */
    {"sweep" DB, "name the sweep file", NULL},
    {"sweep missing.ini" DB, "cannot open the sweep file missing.ini", NULL},
    {"sweep empty.ini" DB, "the file sets nothing", "a [grid] section"},
    {"sweep unknown.ini" DB, "unknown.ini:3: unknown [grid] key 'frobs'",
     "pipebench run --help lists them"},
    {"sweep badval.ini" DB, "badval.ini:2: --stages must be at least 1", "fix the sweep file"},
    {"sweep syntax.ini" DB, "syntax.ini:1: cannot read '[grid'", "expected 'key = value'"},
    {"sweep mpi.ini --hostfile nohosts" DB, "cannot read the --hostfile nohosts", "slots=N"},
    {"sweep mpi.ini --task 1" DB, "--task 1: the sweep mpi.ini has 1 run, 0 to 0", "--dry-run"},
    {"sweep mpi.ini --task -1" DB, "--task is a run's index", "--dry-run"},
    {"sweep mpi.ini --emit pbs" DB, "--emit takes slurm", NULL},
    {"sweep repeat.ini" DB, "repeat.ini:3: --repeat counts trainings", "fix the sweep file"},
    {"sweep repeats.ini" DB, "differ only in repeat", "give repeat one value"},
    {"sweep devices.ini" DB, "--devices 0:0:0: more devices than stages", "give at most 2"},
    {"sweep unknown.ini --jobs 0" DB, "--jobs must be at least 1", NULL},
    {"sweep fifo" DB, "the sweep file fifo is a FIFO", "give the path of a regular file"},
    {"sweep adir" DB, "the sweep file adir is a folder", "give the path of a regular file"},
    /* bleu: text inputs are regular files of a bounded size */
    {"bleu --hyp /dev/zero --ref ref.txt", "the hypothesis file /dev/zero is a device",
     "give the path of a regular file"},
    {"bleu --hyp fifo --ref ref.txt", "the hypothesis file fifo is a FIFO", NULL},
    /* program and simulate */
    {"program --schedule x --stages 4", "unknown schedule 'x'", "valid schedules"},
    {"program --schedule gpipe", "--stages is required", NULL},
    {"program --schedule gpipe --stages 0", "--stages must be between 1 and", "(got 0)"},
    {"simulate --schedule gpipe --stages 0 --cost 1,1,1", "--stages must be between 1 and",
     "(got 0)"},
    {"simulate --schedule gpipe --stages 4 --cost 1e308,1,1", "1e308 is out of range",
     "magnitude must be at most"},
    {"program --schedule gpipe --stages -1", "--stages must be between 1 and", NULL},
    {"program --schedule gpipe --stages 4 --length 2147483647", "--length must be between 1 and",
     NULL},
    {"program --schedule gpipe --stages 4 --optimizer foo", "unknown optimizer 'foo'", NULL},
    {"simulate --schedule gpipe --stages 4", "give the op costs", "--cost F,B,U"},
    {"simulate --schedule gpipe --stages 4 --cost a,b,c", "--cost wants F,B,U", "e.g. --cost"},
    {"simulate --schedule gpipe --stages 4 --cost -1,1,1", "must be finite and non-negative", NULL},
    {"simulate --schedule gpipe --stages 4 --run 999" DB, "no run 999", "`pipebench runs`"},
    /* the commands that read the results */
    {"report" DB, "report needs --table", "usage: pipebench report"},
    {"report --table foo" DB, "unknown table 'foo'", "valid: accuracy"},
    {"report --table accuracy --format xls" DB, "unknown format 'xls'", "valid: md csv latex"},
    {"report --table accuracy --db missing.db", "no results database at missing.db",
     "record runs there first"},
    {"report --table accuracy --db bad.db", "file is not a database", NULL},
    {"plot --figure memory" DB, "plot needs --figure and --out", NULL},
    {"plot --figure foo --out pl" DB, "unknown figure 'foo'", "valid: convergence"},
    {"plot --figure memory --format bmp --out pl" DB, "unknown figure format 'bmp'", NULL},
    {"plot --figure memory --out w.safetensors/sub" DB, "it is not a folder",
     "pass --out with another folder"},
    {"plot --figure memory --run 999 --out pl" DB, "there is no run 999", "lists the runs"},
    {"trace 1" DB, "trace needs --out FILE.json", NULL},
    {"trace 999 --out t.json" DB, "there is no run 999", "lists the runs"},
    {"trace 1 --out nodir/t.json" DB, "cannot write nodir/t.json", "writable output folder"},
    {"trace 1 --out fifo" DB, "cannot write fifo: it is a FIFO", "writable output folder"},
    {"trace 1 --out runs.db" DB, "it is the results database", "give --out another path"},
    {"trace 1 --out t.json --epoch 50" DB, "has no events in epoch 50", "--epoch counts from 1"},
    {"runs --where badkey" DB, "badkey", "KEY=VALUE"},
    {"runs --runs a,b" DB, "--runs", NULL},
    {"runs --db missing.db", "no results database at missing.db", NULL},
    {"show" DB, "show needs a run id", "`pipebench runs` lists them"},
    {"show abc" DB, "show needs a run id", NULL},
    {"show 999" DB, "there is no run 999", "lists the runs"},
    {"resume 999" DB, "there is no run 999", "lists them"},
    {"resume 1" DB, "run 1 is done", "only an interrupted or failed run can be resumed"},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

static char dir[64];

/* The folder's state: every file's path, size and FNV-1a hash, in nftw's order. */
static char snapshot_buf[16384];
static size_t snapshot_len;

static int snapshot_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)ftw;
    uint64_t h = 1469598103934665603ull;
    if (type == FTW_F && S_ISREG(sb->st_mode)) {   /* never opens the FIFO */
        FILE *f = fopen(path, "rb");
        ck_assert(f != NULL);
        int c;
        while ((c = getc(f)) != EOF)
            h = (h ^ (uint64_t)c) * 1099511628211ull;
        fclose(f);
    }
    snapshot_len += (size_t)snprintf(snapshot_buf + snapshot_len,
                                     sizeof snapshot_buf - snapshot_len, "%s %c %lld %016llx\n",
                                     path + strlen(dir),
                                     type != FTW_F ? 'd' : S_ISREG(sb->st_mode) ? 'f' : 'p',
                                     (long long)sb->st_size, (unsigned long long)h);
    ck_assert(snapshot_len < sizeof snapshot_buf);
    return 0;
}

/* The folder's state as text, in a fresh heap string. */
static char *snapshot(void)
{
    snapshot_len = 0;
    ck_assert(nftw(dir, snapshot_entry, 16, FTW_PHYS) == 0);
    return strdup(snapshot_buf);
}

/* Copies the first bytes of each Fashion-MNIST file into dir/trunc: gzip streams cut
 * short, as a broken download leaves them. */
static void write_truncated_dataset(void)
{
    static const char *const names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/trunc'", dir);
    ck_assert_int_eq(system(cmd), 0);
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd,
                 "head -c 3000 /usr/share/datasets/fashion-mnist/%s > '%s/trunc/%s'", names[i],
                 dir, names[i]);
        ck_assert_int_eq(system(cmd), 0);
    }
}

/* dir/badtrail: the Fashion-MNIST files with the training images' gzip trailer (its
 * length) damaged, which a run that reads only their head must still see. */
static void write_bad_trailer_dataset(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/badtrail' && cp /usr/share/datasets/fashion-mnist/*.gz '%s/badtrail/' "
             "&& f='%s/badtrail/train-images-idx3-ubyte.gz' && chmod u+w \"$f\" && "
             "printf '\\001\\002\\003\\004' | dd of=\"$f\" bs=1 seek=$(($(stat -c %%s \"$f\") - 4)) "
             "conv=notrunc status=none", dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* One finished run (run 1, its weights in w.safetensors) and the bad files the cases
 * name; made once, in Check's parent process. */
static void setup(void)
{
    cli_scratch(dir, sizeof dir, "bad");
    char out[8192];
    int rc = cli_run(dir, out, sizeof out, "%s--model mlp --stages 2 --save w.safetensors", RUN);
    ck_assert_msg(rc == 0, "the fixture run failed (%d): %s", rc, out);
    char path[128];
    snprintf(path, sizeof path, "%s/adir", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/empty", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    cli_write(dir, "bad.db", "not a database\n");
    cli_write(dir, "bad.safetensors", "garbage\n");
    cli_write(dir, "empty.ini", "");
    cli_write(dir, "unknown.ini", "[grid]\nschedule = gpipe\nfrobs = 3\n");
    cli_write(dir, "badval.ini", "[grid]\nstages = -1\n");
    cli_write(dir, "syntax.ini", "[grid\nschedule = gpipe\n");
    cli_write(dir, "mpi.ini", "[grid]\nschedule = gpipe\n[run]\nexecutor = mpi\n");
    cli_write(dir, "repeat.ini", "[grid]\nschedule = gpipe\nrepeat = 1, -1\n");
    cli_write(dir, "repeats.ini", "[grid]\nschedule = gpipe\nrepeat = 1, 2\n");
    cli_write(dir, "devices.ini", "[grid]\ndevices = 0, 0:0:0\n[run]\nstages = 2\n");
    write_truncated_dataset();
    write_bad_trailer_dataset();
    snprintf(path, sizeof path, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    char cmd1[512];
    snprintf(cmd1, sizeof cmd1, "mkdir '%s/fmfifo' && cp /usr/share/datasets/fashion-mnist/*.gz "
             "'%s/fmfifo/' && rm '%s/fmfifo/train-images-idx3-ubyte.gz' && mkfifo "
             "'%s/fmfifo/train-images-idx3-ubyte.gz'", dir, dir, dir, dir);
    ck_assert_int_eq(system(cmd1), 0);
    snprintf(path, sizeof path, "%s/cifardir", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/cifardir/data_batch_1.bin", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    cli_write(dir, "ref.txt", "a reference line\n");
    /* the fixture's checkpoint with one weight bit flipped (in its last byte) */
    char cmd0[512];
    snprintf(cmd0, sizeof cmd0, "cp '%s/w.safetensors' '%s/flipped.safetensors'", dir, dir);
    ck_assert_int_eq(system(cmd0), 0);
    snprintf(path, sizeof path, "%s/flipped.safetensors", dir);
    FILE *f = fopen(path, "r+b");
    ck_assert(f != NULL && fseek(f, -1, SEEK_END) == 0);
    int last = getc(f);
    ck_assert(last != EOF && fseek(f, -1, SEEK_END) == 0 && putc(last ^ 0x10, f) != EOF);
    ck_assert_int_eq(fclose(f), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -r '%s/data/wmt16-de-en' '%s/wmt16small'",
             getenv("PB_FIXTURES") ? getenv("PB_FIXTURES") : "tests/fixtures", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void teardown(void)
{
    cli_cleanup(dir);
}

START_TEST(test_bad_input)
{
    const struct bad_input *c = &cases[_i];
    if (PB_HAVE_CUDA && strstr(c->args, "--backend cuda") && pb_test_gpu_sign())
        return;
    char *before = snapshot();
    char out[8192];
    int rc = cli_run(dir, out, sizeof out, "%s", c->args);
    ck_assert_msg(rc == 2, "'%s': exit %d (want 2): %s", c->args, rc, out);
    ck_assert_msg(strstr(out, c->what), "'%s': the message lacks '%s': %s", c->args, c->what, out);
    ck_assert_msg(!c->advice || strstr(out, c->advice), "'%s': the message lacks '%s': %s", c->args,
                  c->advice, out);
    char *after = snapshot();
    ck_assert_msg(!strcmp(before, after), "'%s' changed the folder:\nbefore\n%safter\n%s", c->args,
                  before, after);
    ck_assert_int_eq(cli_db_int(dir, "runs.db", "SELECT count(*) FROM runs"), 1);
    ck_assert_int_eq(
        cli_db_int(dir, "runs.db", "SELECT count(*) FROM runs WHERE status = 'running'"), 0);
    free(before);
    free(after);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("bad_inputs");
    TCase *tc = tcase_create("table");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_bad_input, 0, NCASES);
    suite_add_tcase(s, tc);
    return s;
}
