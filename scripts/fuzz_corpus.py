#!/usr/bin/python3
"""scripts/fuzz_corpus.py — writes the seed corpora of the libFuzzer targets
(tests/fuzz/corpus/<target>/, a few KB each) in the formats the loaders read: small
IDX files (plain and gzip), one-record CIFAR batches and Tiny-ImageNet's text files and
JPEGs (taken from the fixture tree tests/fixtures/data, the JPEGs re-encoded smaller),
aclImdb reviews from the fixture tree, safetensors files of each dtype, sweep files
like the documentation's, and run configurations recorded by a real run of
build/pipebench (left out, with a note, when it is not built). Run with Debian's
python: /usr/bin/python3 scripts/fuzz_corpus.py [BUILD_DIR]."""
import gzip
import io
import json
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile

from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "data")
SEP = b"\n--pb-fuzz-part--\n"   # tests/fuzz/fuzz_util.h's PB_FUZZ_SEP


def put(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), "rb") as f:
        return f.read()


def gz(data):
    return gzip.compress(data, mtime=0)


# ---- Fashion-MNIST IDX: options (parts | crop << 2, limit), labels, SEP, images ----

def idx_pair(n):
    labels = struct.pack(">II", 0x801, n) + bytes((3 * i + 1) % 10 for i in range(n))
    pixels = bytes((x * 7 + y * 3 + i * 40) % 256 for i in range(n) for y in range(28)
                   for x in range(28))
    images = struct.pack(">IIII", 0x803, n, 28, 28) + pixels
    return labels, images


def idx():
    labels, images = idx_pair(3)
    put("idx", "plain", bytes([0, 0]) + labels + SEP + images)
    put("idx", "gzip", bytes([0, 0]) + gz(labels) + SEP + gz(images))
    put("idx", "gzip-limit2-inputs", bytes([1, 2]) + gz(labels) + SEP + gz(images))
    put("idx", "plain-labels", bytes([2, 1]) + labels + SEP + images[:16])


# ---- CIFAR: options (bit 7 CIFAR-100, parts | crop << 2; limit), one-record batch ----

def cifar():
    rec10 = fixture("cifar-10-batches-bin", "test_batch.bin")[:3073]
    rec100 = fixture("cifar-100-binary", "test.bin")[:3074]
    put("cifar", "cifar10", bytes([0, 0]) + rec10)
    put("cifar", "cifar10-crop24", bytes([3 << 2, 1]) + rec10)
    put("cifar", "cifar100", bytes([0x80, 0]) + rec100)
    put("cifar", "cifar100-labels", bytes([0x80 | 2, 0]) + rec100)


# ---- Tiny-ImageNet: options, wnids.txt, SEP, val_annotations.txt, SEP, JPEGs ----

def small_jpeg(path, quality):
    img = Image.open(os.path.join(FIXTURES, "tiny-imagenet-200", "val", "images", path))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def tiny_imagenet():
    wnids = fixture("tiny-imagenet-200", "wnids.txt")
    notes = fixture("tiny-imagenet-200", "val", "val_annotations.txt").splitlines(True)
    rgb, gray = small_jpeg("val_0.JPEG", 20), small_jpeg("val_3.JPEG", 20)
    one = notes[0]
    put("tiny_imagenet", "rgb", bytes([0, 0]) + wnids + SEP + one + SEP + rgb)
    put("tiny_imagenet", "gray-crop24", bytes([3 << 2, 0]) + wnids + SEP +
        notes[3].replace(b"val_3", b"val_0") + SEP + gray)
    put("tiny_imagenet", "labels-only", bytes([2, 0]) + wnids + SEP + notes[0] + notes[1] + SEP +
        rgb + SEP + rgb)


# ---- IMDb: options (parts | split << 2, vocab, steps, limit), reviews "name\ntext" ----

def imdb():
    reviews = []
    for sub in ("train/neg", "train/pos", "test/neg", "test/pos"):
        folder = os.path.join(FIXTURES, "aclImdb", sub)
        for name in sorted(os.listdir(folder))[:2]:
            text = fixture("aclImdb", sub, name)[:300]
            reviews.append(f"{sub}/{name}\n".encode() + text)
    body = SEP.join(reviews)
    put("imdb", "train", bytes([0, 0, 0, 0]) + body)
    put("imdb", "test-vocab20-steps16", bytes([4, 18, 16, 2]) + body)
    put("imdb", "labels", bytes([2, 0, 8, 0]) + body)


# ---- imdb.npz: options (parts | split << 2, vocab, limit), the file ----

def imdb_npz():
    npz = fixture("imdb-npz", "imdb.npz")
    put("imdb_npz", "train", bytes([0, 0, 0]) + npz)
    put("imdb_npz", "test-vocab20-limit4", bytes([4, 18, 4]) + npz)
    put("imdb_npz", "labels", bytes([2, 0, 0]) + npz)


# ---- wmt16-de-en: options (parts | split << 2, steps, limit), vocab, .en, .de ----

def wmt16():
    vocab = fixture("wmt16-de-en", "vocab.bpe.32000")
    for split, stem in ((0, "train.tok.clean.bpe.32000"), (4, "newstest2014.tok.bpe.32000")):
        en = fixture("wmt16-de-en", stem + ".en")
        de = fixture("wmt16-de-en", stem + ".de")
        put("wmt16", f"split{split}", bytes([split, 0, 0]) + vocab + SEP + en + SEP + de)
        put("wmt16", f"split{split}-steps8", bytes([split | 1, 8, 3]) + vocab + SEP + en + SEP + de)


# ---- safetensors: whole files ----

def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data),
                                                                         len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def st():
    f32 = struct.pack("<4f", 1.0, -2.5, 3.25, 0.0)
    put("safetensors", "dtypes", safetensors([
        ("w", "F32", [2, 2], f32), ("b", "F64", [3], struct.pack("<3d", 0.5, 1e-3, -7.0)),
        ("steps", "I64", [1], struct.pack("<q", 12)), ("idx", "I32", [2], struct.pack("<2i", 3, 4)),
        ("scalar", "F32", [], struct.pack("<f", 9.0)), ("empty", "F32", [0, 3], b"")],
        {"pipebench_state": "1", "run_id": "3", "model": "mlp"}))
    put("safetensors", "metadata-only", safetensors([], {"format": "pt"}))
    put("safetensors", "one", safetensors([("stage0.fc1.weight", "F32", [1, 4], f32)]))
    # found: a __metadata__ that is not an object of strings made pb_st_save abort
    put("safetensors", "regress-metadata-number", safetensors([], 5))


# ---- sweep files ----

SWEEPS = {
    "small.ini": "; two schedules, two seeds\n[grid]\nschedule = gpipe, pipedream\n"
                 "seed = 1,\n       2\n[run]\nmodel = mlp\nlimit-train = 640\nlimit-val = 320\n"
                 "microbatch-size = 32\nepochs = 1\n",
    "table4.ini": "[grid]\nschedule = gpipe, pipedream, pipedream-2bw, spectrain, pipeoptim\n"
                  "optimizer = sgdm, adamw\nmodel = lenet\nstages = 4\nseed = 1, 2, 3\n[run]\n"
                  "epochs = 4\nlimit-train = 6000\nlimit-val = 2000\nexecutor = threads\n",
    "zoo.ini": "[grid]\nmodel = vgg16, googlenet\npreset = paper, small\nmicrobatches = 4, 8\n"
               "[run]\nstages = 4\nlr = 0.01\nmomentum = 0.9\nweight-decay = 5e-4\n"
               "lr-steps = 40,60\nnesterov = on\nlabel-smoothing = 0.1\ndataset = synthetic\n",
}


def sweep():
    for name, text in SWEEPS.items():
        put("sweep", name, text.encode())


# ---- run configurations, as recorded ----

RUNS = [
    "--model mlp --dataset synthetic --stages 2 --limit-train 64 --limit-val 32 "
    "--microbatch-size 32",
    "--model mlp --dataset synthetic --schedule gpipe --microbatches 4 --optimizer adam "
    "--lr 1e-3 --lr-steps 1,2 --lr-gamma 0.5 --limit-train 64 --limit-val 32 "
    "--microbatch-size 16 --trace-window 1:3 --experiment fuzz-seed --seed 7",
    "--model lenet --dataset synthetic --schedule pipedream-2bw --optimizer sgdm --nesterov "
    "--momentum 0.9 --weight-decay 5e-4 --label-smoothing 0.1 --limit-train 32 --limit-val 32 "
    "--microbatch-size 16 --checkpoint-every 0 --shuffle off --threads 1",
]


def run_json(build):
    # found: a trace window out of int's range was converted (undefined behaviour)
    put("run_json", "regress-trace-1e30", b'{"model":"mlp","trace_mb_lo":0,"trace_mb_hi":1e30}')
    # found: a number beyond float's range became inf, recorded as null, refused on resume
    put("run_json", "regress-float-range", b'{"model":"mlp","weight_decay":1e308,"lr":1e39}')
    exe = os.path.join(build, "pipebench")
    if not os.path.exists(exe):
        print(f"fuzz_corpus: {exe} is not built; the run_json seeds are left as they are")
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "r.db")
        for args in RUNS:
            subprocess.run([exe, "run", "--quiet", "--db", db] + args.split(), check=True,
                           cwd=tmp)
        con = sqlite3.connect(db)
        rows = con.execute("SELECT id, config FROM runs ORDER BY id").fetchall()
        con.close()
    for rid, config in rows:
        put("run_json", f"run{rid}.json", config.encode())


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    idx()
    cifar()
    tiny_imagenet()
    imdb()
    imdb_npz()
    wmt16()
    st()
    sweep()
    run_json(build)


if __name__ == "__main__":
    main()
