"""Build the PDFs of the blind "fenwick" golden set (Fenwick Aero Club, fictional).

Deterministic: fixed text, DejaVu fonts embedded as TrueType (pdf.fonttype 42), CreationDate removed.
Run: .venv/bin/python benchmarks/golden/fenwick_build.py
Writes hangarage_fuel_prices.pdf (ruled table), fleet_hire_rates.pdf (unruled, whitespace-aligned table)
noise_notice_scan.pdf (image only, no text layer) and tech_log_march_2024.md
(40 templated records) into benchmarks/golden/fenwick/.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OUT = Path(__file__).resolve().parent / "fenwick"
plt.rcParams["pdf.fonttype"] = 42
plt.rcParams["font.family"] = "DejaVu Sans"


def _meta(title: str) -> dict[str, object]:
    return {"Title": title, "Author": "Fenwick Aero Club", "CreationDate": None, "Creator": "fenwick_build.py"}


def ruled() -> None:
    fig = plt.figure(figsize=(8.27, 11.69))
    fig.text(0.08, 0.94, "Fenwick Aero Club", fontsize=16, weight="bold")
    fig.text(0.08, 0.91, "Hangarage and Fuel Price List 2024", fontsize=13)
    rows = [
        ["Item", "Unit", "Member price", "Visitor price"],
        ["Avgas 100LL", "per litre", "£2.38", "£2.74"],
        ["UL91 unleaded", "per litre", "£2.21", "£2.59"],
        ["Aeroshell W100 oil", "per quart", "£11.50", "£13.00"],
        ["Hangar bay, single engine", "per month", "£265", "not offered"],
        ["Hangar bay, twin engine", "per month", "£390", "not offered"],
        ["Outside tie-down", "per night", "£8", "£14"],
        ["Engine pre-heat", "per use", "£15", "£20"],
        ["Aircraft wash", "per wash", "£40", "£55"],
    ]
    ax = fig.add_axes((0.08, 0.55, 0.84, 0.32))
    ax.axis("off")
    table = ax.table(cellText=rows, loc="upper center", cellLoc="left", edges="closed", colWidths=[0.4, 0.18, 0.21, 0.21])
    table.auto_set_font_size(False)
    table.set_fontsize(10)
    table.scale(1, 2.0)
    notes = [
        "Prices include VAT at 20%. Valid from 1 April 2024 to 31 March 2025.",
        "Hangar bays are let by the calendar month and invoiced in advance.",
        "Fuel is dispensed by the duty refueller between 08:30 and 17:30 only.",
    ]
    for i, line in enumerate(notes):
        fig.text(0.08, 0.50 - i * 0.025, line, fontsize=10)
    fig.savefig(OUT / "hangarage_fuel_prices.pdf", metadata=_meta("Hangarage and Fuel Price List 2024"))
    plt.close(fig)


def unruled() -> None:
    fig = plt.figure(figsize=(8.27, 11.69))
    fig.text(0.06, 0.94, "Fenwick Aero Club - Fleet Hire Rates", fontsize=16, weight="bold")
    fig.text(0.06, 0.91, "Effective 1 May 2024. Rates are wet (fuel included) and charged on Hobbs time.", fontsize=10)
    cols = [0.06, 0.19, 0.42, 0.52, 0.66, 0.80]
    rows = [
        ["Registration", "Type", "Seats", "Solo per hr", "Dual per hr", "Fuel burn"],
        ["G-FNWA", "Marlow M2 Tern", "2", "£168", "£216", "22 L/h"],
        ["G-FNWB", "Marlow M2 Tern", "2", "£172", "£220", "22 L/h"],
        ["G-FNWC", "Marlow M4 Tern", "4", "£224", "£272", "34 L/h"],
        ["G-FNWD", "Pellham Scout", "2", "£155", "£203", "19 L/h"],
        ["G-FNWE", "Pellham Arrowline", "4", "£241", "£289", "38 L/h"],
    ]
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            fig.text(cols[c], 0.85 - r * 0.03, cell, fontsize=10, weight="bold" if r == 0 else "normal")
    notes = [
        "Dual rates include the instructor. Minimum booking is one hour.",
        "G-FNWB has the upgraded glass cockpit, hence its higher rate.",
        "Overnight away from Fenwick Down: a charge of 2 hours minimum per day applies.",
    ]
    for i, line in enumerate(notes):
        fig.text(0.06, 0.62 - i * 0.025, line, fontsize=10)
    fig.savefig(OUT / "fleet_hire_rates.pdf", metadata=_meta("Fleet Hire Rates 2024"))
    plt.close(fig)


SCAN_LINES = [
    "FENWICK AERO CLUB",
    "NOTICE TO MEMBERS - NOISE ABATEMENT",
    "Effective 2 June 2024",
    "",
    "1. Departures from runway 26 must turn left onto",
    "   heading 220 before reaching 600 ft, to avoid",
    "   Hartlow village.",
    "2. No circuit training before 09:00 or after 20:00",
    "   on Sundays.",
    "3. Engine ground runs are limited to 5 minutes",
    "   and must be done at the run-up bay.",
    "",
    "Signed: Ian Petrakis, Chief Flying Instructor",
]


def scanned() -> None:
    fig = plt.figure(figsize=(8.27, 11.69), dpi=150)
    for i, line in enumerate(SCAN_LINES):
        fig.text(0.08, 0.92 - i * 0.04, line, fontsize=15, family="DejaVu Serif")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150)
    plt.close(fig)
    buf.seek(0)
    img = plt.imread(buf)
    fig2 = plt.figure(figsize=(8.27, 11.69))
    ax = fig2.add_axes((0, 0, 1, 1))
    ax.axis("off")
    ax.imshow(img, interpolation="nearest")
    fig2.savefig(OUT / "noise_notice_scan.pdf", dpi=150, metadata=_meta("Scanned notice"))
    plt.close(fig2)


def records() -> None:
    """40 templated tech-log entries that differ only in identifier and numbers."""
    rnd = random.Random(20240912)
    regs = ["G-FNWA", "G-FNWB", "G-FNWC", "G-FNWD", "G-FNWE"]
    lines = ["# Fenwick Aero Club - Tech Log Entries, March 2024", "",
             "Each entry records one flight. Hobbs times are in hours.", ""]
    hobbs = {r: 1000.0 + 731.4 * i for i, r in enumerate(regs)}
    for n in range(40):
        tl = f"TL-24-{301 + n:04d}"
        reg = regs[n % 5]
        dur = round(rnd.uniform(0.6, 2.4), 1)
        out = round(hobbs[reg], 1)
        hobbs[reg] = out + dur + round(rnd.uniform(0.2, 3.0), 1)
        lines += [f"## Tech log entry {tl}", "",
                  f"- Date: {1 + n * 30 // 40} March 2024",
                  f"- Aircraft: {reg}",
                  f"- Pilot member number: {4100 + rnd.randint(1, 899)}",
                  f"- Hobbs out: {out:.1f}",
                  f"- Hobbs in: {out + dur:.1f}",
                  f"- Fuel uplift: {rnd.randint(12, 95)} litres",
                  f"- Oil added: {rnd.choice(['0.0', '0.25', '0.5', '0.75', '1.0'])} litres",
                  f"- Landings: {rnd.randint(1, 9)}",
                  ""]
    (OUT / "tech_log_march_2024.md").write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    ruled()
    unruled()
    scanned()
    records()
