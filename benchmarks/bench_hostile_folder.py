"""A hostile folder ingested in bounded time and memory (issue 10): good files next to every bad file the
tester found, plus random bytes, a 0-byte file, a truncated PDF, an encrypted PDF and 2,000 blank pages.

Builds the folder in a temp dir, runs `relayrag ingest FOLDER --json` in a child process (its own
RELAYRAG_HOME) and reports wall seconds, the child's peak RSS (getrusage of children), and each file's
outcome: ingested, or failed/skipped with its one-line reason. With --baseline, the same ingest of only the
good files runs first, as the same-run reference. Prints a Markdown table (for benchmarks/RESULTS.md) and
one JSON line. Usage: python benchmarks/bench_hostile_folder.py [--bomb-mib 1024] [--baseline]

`--page-images` (issue 24) instead ingests, each alone, PDFs of 10 / 100 / 1,000 pages of 14400x14400 pt (and
1,000 Letter pages) and multi-frame TIFFs (10 and 500 frames, and two frame bombs), next to a one-file baseline
of the same run: peak RSS must not grow with the page or frame count.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

GOOD_PDF = Path("/work/shared/bench/pdfs/nics-background-checks-2015-11.pdf")


def _pdf(pages: list[bytes], flate: bool = False, size_pt: tuple[int, int] = (612, 792)) -> bytes:
    """A minimal PDF: one Helvetica font, one content stream per page (already compressed when flate), every
    page `size_pt` points (width, height)."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for content in pages:
        extra = b" /Filter /FlateDecode" if flate else b""
        objs.append(b"<< /Length %d%s >>\nstream\n" % (len(content), extra) + content + b"\nendstream")
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 3 0 R >> >>"
                    b" /Contents %d 0 R >>" % (*size_pt, len(objs)))
        kids.append(len(objs))
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def _bomb(mib: int) -> bytes:
    c = zlib.compressobj(9)
    block = b" " * 2**20
    return _pdf([b"".join(c.compress(block) for _ in range(mib)) + c.flush()], flate=True)


def _encrypted(src: bytes) -> bytes:
    import pypdf
    w = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(src)))
    w.encrypt(user_password="secret", owner_password="owner")
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def build(folder: Path, bomb_mib: int) -> dict[str, str]:
    """Write the folder; returns file name -> what it is ("good" or the kind of bad)."""
    folder.mkdir(parents=True)
    kinds = {}

    def put(name: str, data: bytes, kind: str) -> None:
        (folder / name).write_bytes(data)
        kinds[name] = kind

    put("capybara.txt", "The capybara\u2028is the largest living rodent.\n".encode(), "good (U+2028 inside)")
    put("bees.md", b"# Bees\n\nA colony can contain up to 60,000 worker bees in summer.\n", "good")
    put("rail.html", b"<html><title>Rail</title><p>The standard gauge is 1,435 mm.</p></html>", "good")
    put("report.pdf", GOOD_PDF.read_bytes(), "good")
    put("nested-8k.html", b"<div>" * 8000 + b"deep text 8k" + b"</div>" * 8000, "good (8,000 nested divs, 88 KB)")
    put("nested-100k.html", b"<div>" * 100000 + b"deep text 100k" + b"</div>" * 100000,
        "good (100,000 nested divs, 1.1 MB)")
    put("bomb.pdf", _bomb(bomb_mib), f"bad: {bomb_mib} MiB of spaces in one Flate stream")
    put("random.pdf", os.urandom(50_000), "bad: random bytes")
    put("empty.txt", b"", "bad: 0 bytes")
    good_pdf = GOOD_PDF.read_bytes()
    put("truncated.pdf", good_pdf[: len(good_pdf) // 2], "bad: truncated")
    put("encrypted.pdf", _encrypted(good_pdf), "bad: encrypted")
    put("blank-2000.pdf", _pdf([b""] * 2000), "bad: 2,000 blank pages")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("word/document.xml", "<w:document/>")
    put("renamed-zip.pdf", buf.getvalue(), "bad: a ZIP named .pdf")
    put("bad\nname.pdf", b"not a pdf", "bad: newline in the name")
    (folder / "passwd.txt").symlink_to("/etc/passwd")
    kinds["passwd.txt"] = "bad: symlink to /etc/passwd"
    return kinds


def _page_text(i: int, size_pt: tuple[int, int]) -> bytes:
    """One line of text near the top left of a page (what the issue's 88 KB, 300-page PDF had)."""
    return b"BT /F1 24 Tf 72 %d Td (Page %d of the hostile report: the inspection found %d defects.) Tj ET" % (
        size_pt[1] - 100, i, i % 17)


def pages_pdf(n: int, size_pt: tuple[int, int]) -> bytes:
    return _pdf([_page_text(i, size_pt) for i in range(1, n + 1)], size_pt=size_pt)


def frames_tiff(sizes: list[tuple[int, int]]) -> bytes:
    """A multi-frame TIFF, deflate-compressed, each frame white with one line of text (small on disk)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=40)

    def frame(i: int, size: tuple[int, int]):
        im = Image.new("L", size, 255)
        ImageDraw.Draw(im).text((40, 40), f"Sheet {i}: inspection form, {i % 13} defects", fill=0, font=font)
        return im

    frames = [frame(i, s) for i, s in enumerate(sizes, 1)]
    buf = io.BytesIO()
    frames[0].save(buf, format="TIFF", save_all=True, append_images=frames[1:], compression="tiff_deflate")
    return buf.getvalue()


# one file per ingest: (file name, what it is, builder)
# (file name, what it is, builder, OCR on?): OCR (tesseract, 1-4 s a frame here) is per frame and flat in memory
# (frames-10 and frames-40 with it); the 500-frame and bomb rows run with tesseract off PATH, so that they
# measure decoding, page images and indexing within the per-file time budget
PAGE_IMAGE_CASES = [
    ("pages-10.pdf", "10 pages of 14400x14400 pt, one line each", lambda: pages_pdf(10, (14400, 14400)), True),
    ("pages-100.pdf", "100 pages of 14400x14400 pt, one line each", lambda: pages_pdf(100, (14400, 14400)), True),
    ("pages-1000.pdf", "1,000 pages of 14400x14400 pt, one line each", lambda: pages_pdf(1000, (14400, 14400)),
     True),
    ("letter-1000.pdf", "1,000 Letter pages, one line each", lambda: pages_pdf(1000, (612, 792)), True),
    ("frames-10.tiff", "10 frames of 1700x1100 px", lambda: frames_tiff([(1700, 1100)] * 10), True),
    ("frames-40.tiff", "40 frames of 1700x1100 px", lambda: frames_tiff([(1700, 1100)] * 40), True),
    ("frames-10-no-ocr.tiff", "10 frames of 1700x1100 px", lambda: frames_tiff([(1700, 1100)] * 10), False),
    ("frames-500.tiff", "500 frames of 1700x1100 px", lambda: frames_tiff([(1700, 1100)] * 500), False),
    ("frames-8x7700.tiff", "8 frames of 7700x7700 px (474 MP)", lambda: frames_tiff([(7700, 7700)] * 8), False),
    ("frames-hidden.tiff", "a 100x100 first frame, then four of 12000x12000 px",
     lambda: frames_tiff([(100, 100)] + [(12000, 12000)] * 4), False),
]


def _build_in_child(name: str, target: Path) -> None:
    """Build one case in a child process, so this process never holds the frames (nor passes them on)."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
            "from benchmarks.bench_hostile_folder import PAGE_IMAGE_CASES\n"
            f"make = {{c[0]: c[2] for c in PAGE_IMAGE_CASES}}[{name!r}]\n"
            f"open({str(target)!r}, 'wb').write(make())\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# the CLI in a child that reports its own peak RSS on stderr when it exits (typer exits via SystemExit)
# VmHWM, not getrusage's ru_maxrss: Linux folds the parent's high-water mark into the child's ru_maxrss at exec
# (vfork shares the parent's memory until then), so a parent that built a 900 MB TIFF reported a 900 MB child
LAUNCH = ("import atexit, runpy, sys\n"
          "def _hwm():\n"
          "    for line in open('/proc/self/status'):\n"
          "        if line.startswith('VmHWM:'):\n"
          "            sys.stderr.write('PEAK_RSS_KB %d\\n' % int(line.split()[1]))\n"
          "atexit.register(_hwm)\n"
          "sys.argv = ['relayrag'] + sys.argv[1:]\n"
          "runpy.run_module('relayrag.cli', run_name='__main__')\n")


def run_ingest(folder: Path, home: Path, env_extra: dict | None = None) -> tuple[dict, float, float]:
    env = {**os.environ, "RELAYRAG_HOME": str(home), **(env_extra or {})}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", LAUNCH, "ingest", str(folder), "-c", "hostile", "--json",
                        "--no-progress"], env=env, capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"ingest failed ({p.returncode}): {p.stderr[-2000:]}")
    peak_kb = max(int(line.split()[1]) for line in p.stderr.splitlines() if line.startswith("PEAK_RSS_KB"))
    return json.loads(p.stdout), seconds, peak_kb / 1024


def page_image_rows(tmp: Path, only: list[str] | None) -> None:
    """Issue 24: each PAGE_IMAGE_CASES file ingested alone (page images on, 96 dpi), peak RSS of the child; the
    same-run baseline is the ingest of the good text file alone. Peak RSS must not grow with pages or frames."""
    good = tmp / "base"
    good.mkdir()
    (good / "bees.md").write_bytes(b"# Bees\n\nA colony can contain up to 60,000 worker bees in summer.\n")
    _, s, base_rss = run_ingest(good, tmp / "home-base")
    print("| file | what | size | OCR | outcome | pages with an image | seconds | peak RSS |\n"
          "|---|---|---|---|---|---|---|---|")
    print(f"| `bees.md` (baseline) | one Markdown paragraph | 66 B | - | ingested | 0 | {s:.1f} | {base_rss:.0f} MiB |")
    rows = []
    no_tesseract = {"PATH": str(Path(sys.executable).parent)}  # tesseract is looked up on PATH
    for name, what, _, ocr in PAGE_IMAGE_CASES:
        if only and name not in only:
            continue
        folder = tmp / name.replace(".", "-")
        folder.mkdir()
        _build_in_child(name, folder / name)
        size = (folder / name).stat().st_size
        summary, s, rss = run_ingest(folder, tmp / ("home-" + name), None if ocr else no_tesseract)
        failed = [f["error"] for f in summary["failed"]]
        outcome = ("failed: " + failed[0]) if failed else "ingested"
        pages = (summary.get("pages") or {}).get("indexed", 0)
        print(f"| `{name}` | {what} | {size / 1024:,.0f} KB | {'on' if ocr else 'off'} | {outcome.replace('|', '/')} "
              f"| {pages} | {s:.1f} | {rss:.0f} MiB |", flush=True)
        rows.append({"file": name, "bytes": size, "ocr": ocr, "seconds": round(s, 1), "peak_rss_mib": round(rss),
                     "pages": pages, "outcome": outcome})
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(tmp / ("home-" + name), ignore_errors=True)
    print(json.dumps({"baseline_peak_rss_mib": round(base_rss), "rows": rows,
                      "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}))


def _status_kb(pid: int, field: str) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def dashboard_upload(tmp: Path, pages: int) -> None:
    """Issue 24: the dashboard process's memory around one upload of a PDF of `pages` pages of 14400x14400 pt:
    VmRSS at rest after a warm-up upload (models loaded), VmHWM during the upload, VmRSS 10 s after its job ended.
    A real `relayrag dashboard` child on 127.0.0.1, a bearer token, /proc/PID/status sampled."""
    import re
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "RELAYRAG_HOME": str(tmp / "home-dash"), "RELAYRAG_DASHBOARD_TOKENS": "bench-token"}
    relayrag = str(Path(sys.executable).parent / "relayrag")
    proc = subprocess.Popen([relayrag, "dashboard", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": "Bearer bench-token"}

    def upload(name: str, data: bytes) -> None:
        boundary = "benchboundary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        req = urllib.request.Request(f"{base}/collections/bench/upload", data=body, method="POST", headers={
            **headers, "Content-Type": f"multipart/form-data; boundary={boundary}"})
        html = urllib.request.urlopen(req, timeout=120).read().decode()
        job = re.search(r"/jobs/([^/\"']+)/events", html).group(1)
        with urllib.request.urlopen(urllib.request.Request(f"{base}/jobs/{job}/events", headers=headers),
                                    timeout=3600) as events:
            for line in events:
                if line.startswith(b"event: summary") or line.startswith(b"event: error"):
                    break

    try:
        deadline = time.time() + 180
        while True:
            try:
                if urllib.request.urlopen(f"{base}/healthz", timeout=2).status == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise SystemExit("the dashboard did not start")
            time.sleep(0.5)
        upload("warm-up.md", b"# Warm-up\n\nA short note that loads the models.\n")
        time.sleep(10)
        rest_before = _status_kb(proc.pid, "VmRSS")
        hwm_before = _status_kb(proc.pid, "VmHWM")
        t0 = time.perf_counter()
        upload(f"pages-{pages}.pdf", pages_pdf(pages, (14400, 14400)))
        seconds = time.perf_counter() - t0
        time.sleep(10)
        rest_after, hwm = _status_kb(proc.pid, "VmRSS"), _status_kb(proc.pid, "VmHWM")
    finally:
        proc.terminate()
        proc.wait(30)
    print(json.dumps({"dashboard_upload_pages": pages, "seconds": round(seconds, 1),
                      "rss_at_rest_before_mib": round(rest_before / 1024), "peak_before_mib": round(hwm_before / 1024),
                      "peak_during_mib": round(hwm / 1024), "rss_10s_after_mib": round(rest_after / 1024),
                      "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bomb-mib", type=int, default=1024)
    ap.add_argument("--baseline", action="store_true", help="first ingest only the good files (reference)")
    ap.add_argument("--page-images", action="store_true",
                    help="instead: PDFs of 10 / 100 / 1,000 pages and multi-frame TIFFs, each ingested alone")
    ap.add_argument("--only", nargs="*", help="with --page-images: only these file names")
    ap.add_argument("--dashboard-upload", type=int, metavar="PAGES",
                    help="instead: the dashboard process's memory around one upload of a PDF of PAGES huge pages")
    args = ap.parse_args()
    if args.dashboard_upload:
        tmp = Path(tempfile.mkdtemp(prefix="relayrag-dash-"))
        try:
            dashboard_upload(tmp, args.dashboard_upload)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    if args.page_images:
        tmp = Path(tempfile.mkdtemp(prefix="relayrag-pages-"))
        try:
            page_image_rows(tmp, args.only)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    tmp = Path(tempfile.mkdtemp(prefix="relayrag-hostile-"))
    try:
        kinds = build(tmp / "folder", args.bomb_mib)
        base = None
        if args.baseline:
            good = tmp / "good"
            good.mkdir()
            for name, kind in kinds.items():
                if kind.startswith("good"):
                    shutil.copy(tmp / "folder" / name, good / name)
            _, s, rss = run_ingest(good, tmp / "home-good")
            base = {"seconds": round(s, 1), "peak_rss_mib": round(rss)}
        summary, seconds, rss = run_ingest(tmp / "folder", tmp / "home")
        failed = {Path(f["path"]).name: f["error"] for f in summary["failed"]}
        rows = []
        for name, kind in kinds.items():
            outcome = ("failed: " + failed[name]) if name in failed else "ingested"
            rows.append((name, kind, outcome))
        load = os.getloadavg()
        print("| file | what | outcome |\n|---|---|---|")
        for name, kind, outcome in rows:
            shown = name.replace("\n", "\\n")
            print(f"| `{shown}` | {kind} | {outcome.replace('|', '/').replace(chr(10), ' ')} |")
        result = {"seconds": round(seconds, 1), "peak_rss_mib": round(rss), "ingested": summary["files"]["ingested"],
                  "failed": summary["files"]["failed"], "chunks": summary["chunks_total"], "baseline_good_only": base,
                  "loadavg_1_5_15": [round(x, 2) for x in load], "cpus": os.cpu_count()}
        print(json.dumps(result))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
