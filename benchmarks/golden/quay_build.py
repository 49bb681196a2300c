"""Regenerate the generated files of the blind "quay" golden set.

    python benchmarks/golden/quay_build.py

Writes into benchmarks/golden/quay/:
  tariff_2026.pdf        two pages, ruled tables (lines drawn between cells)
  trailer_schedule.pdf   one page, unruled table (columns aligned by whitespace only)
  haccp_policy.pdf       two pages of running text; approval lines + PDF metadata
  scanned_notice.pdf     one image-only page (text rendered to a PNG, no text layer)
  cold_rooms.md          40 templated records CR-101 ... CR-140

Everything is deterministic (fixed seed, no creation date); text in the text PDFs is
real text (TrueType, pdf.fonttype 42), so pdfplumber extracts it.
"""

from __future__ import annotations

import io
import os
import random
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

os.environ.setdefault("SOURCE_DATE_EPOCH", "1767225600")
matplotlib.rcParams["pdf.fonttype"] = 42
matplotlib.rcParams["font.family"] = "DejaVu Sans"
matplotlib.rcParams["svg.hashsalt"] = "quay"

OUT = Path(__file__).resolve().parent / "quay"
A4 = (8.27, 11.69)


def _pdf(path: Path, title: str, author: str) -> PdfPages:
    return PdfPages(
        path,
        metadata={"Title": title, "Author": author, "Creator": "quay_build.py", "CreationDate": None},
    )


def _page() -> plt.Figure:
    return plt.figure(figsize=A4)


def _hline(fig: plt.Figure, y: float, x0: float, x1: float, lw: float = 0.8) -> None:
    fig.add_artist(Line2D([x0, x1], [y, y], transform=fig.transFigure, color="black", lw=lw))


def _vline(fig: plt.Figure, x: float, y0: float, y1: float, lw: float = 0.8) -> None:
    fig.add_artist(Line2D([x, x], [y0, y1], transform=fig.transFigure, color="black", lw=lw))


def _ruled_table(fig: plt.Figure, top: float, cols: list[float], rows: list[list[str]], row_h: float = 0.032) -> float:
    """Draw a fully ruled table; cols are the left x of each column plus the right edge."""
    y = top
    _hline(fig, y, cols[0], cols[-1], 1.2)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            fig.text(cols[j] + 0.008, y - row_h * 0.65, cell, fontsize=8.5, weight="bold" if i == 0 else "normal")
        y -= row_h
        _hline(fig, y, cols[0], cols[-1], 1.2 if i == 0 else 0.8)
    for x in cols:
        _vline(fig, x, y, top)
    return y


def _paragraphs(fig: plt.Figure, top: float, lines: list[str], size: float = 9.5, step: float = 0.022) -> float:
    y = top
    for line in lines:
        if line:
            bold = line.startswith("## ")
            fig.text(
                0.08,
                y,
                line[3:] if bold else line,
                fontsize=size + (1.5 if bold else 0),
                weight="bold" if bold else "normal",
            )
        y -= step
    return y


def tariff() -> None:
    with _pdf(OUT / "tariff_2026.pdf", "Storage and Handling Tariff 2026", "Quayside Cold Storage Ltd") as pdf:
        fig = _page()
        fig.text(0.08, 0.94, "Quayside Cold Storage Ltd", fontsize=15, weight="bold")
        fig.text(0.08, 0.915, "Storage and Handling Tariff 2026", fontsize=12)
        fig.text(0.08, 0.89, "Valid from 1 April 2026 to 31 March 2027. All prices in GBP and exclude VAT.", fontsize=9)
        fig.text(0.08, 0.85, "Table 1. Storage and handling charges by temperature zone", fontsize=10, weight="bold")
        rows = [
            ["Zone", "Temperature range", "Storage per pallet/week", "Handling in", "Handling out", "Minimum stay"],
            ["Ambient", "+10 to +20 °C", "£3.30", "£2.50", "£2.50", "none"],
            ["Chill", "+2 to +5 °C", "£5.20", "£3.10", "£3.25", "1 week"],
            ["Frozen", "-18 to -22 °C", "£6.45", "£3.60", "£3.85", "2 weeks"],
            ["Deep frozen", "-25 to -30 °C", "£7.90", "£4.15", "£4.40", "2 weeks"],
            ["Ultra-low", "-55 to -60 °C", "£14.75", "£6.80", "£7.05", "4 weeks"],
        ]
        cols = [0.08, 0.20, 0.36, 0.56, 0.68, 0.80, 0.93]
        y = _ruled_table(fig, 0.83, cols, rows)
        _paragraphs(
            fig,
            y - 0.04,
            [
                "Storage is charged per pallet position per week or part week, counted from the day of receipt.",
                "Pallets over 1.8 m high occupy two positions and are charged as two pallets.",
                "Handling in covers unloading, probe check and put-away; handling out covers picking and loading.",
                "A fuel and energy surcharge of 4.5% is added to storage charges when the wholesale power",
                "index exceeds the April 2026 reference level.",
            ],
            size=9,
        )
        fig.text(0.5, 0.04, "Page 1 of 2", ha="center", fontsize=8)
        pdf.savefig(fig)
        plt.close(fig)

        fig = _page()
        fig.text(0.08, 0.94, "Table 2. Ancillary services", fontsize=10, weight="bold")
        rows = [
            ["Service", "Unit", "Price", "Lead time"],
            ["Labelling", "per carton", "£0.18", "24 hours"],
            ["Shrink-wrapping", "per pallet", "£2.25", "same day"],
            ["Pallet exchange", "per pallet", "£11.00", "same day"],
            ["Blast freezing (Chamber B1)", "per pallet", "£9.50", "48 hours"],
            ["Temperature logging report", "per month", "£15.00", "5 working days"],
            ["Out-of-hours opening", "per hour", "£95.00", "72 hours"],
            ["Stock count (full)", "per count", "£120.00", "7 days"],
        ]
        cols = [0.08, 0.38, 0.56, 0.70, 0.90]
        y = _ruled_table(fig, 0.92, cols, rows)
        _paragraphs(
            fig,
            y - 0.04,
            [
                "Invoices are raised on the first working day of each month.",
                "Late payment interest is charged at 3% above base rate.",
            ],
            size=9,
        )
        fig.text(0.5, 0.04, "Page 2 of 2", ha="center", fontsize=8)
        pdf.savefig(fig)
        plt.close(fig)


def trailer_schedule() -> None:
    with _pdf(
        OUT / "trailer_schedule.pdf", "Reefer Trailer Schedule", "Quayside Cold Storage Ltd Transport Office"
    ) as pdf:
        fig = _page()
        fig.text(0.08, 0.94, "Reefer Trailer Schedule", fontsize=15, weight="bold")
        fig.text(0.08, 0.915, "Week commencing 6 July 2026 - weekday departures from Saltmere depot", fontsize=10)
        header = ["Route", "Trailer", "Depart", "Destination", "Distance", "Set point"]
        rows = [
            ["R1", "TR-07", "04:30", "Brackenfield DC", "142 km", "-20 °C"],
            ["R2", "TR-11", "05:15", "Oldcastle Market", "88 km", "+3 °C"],
            ["R3", "TR-03", "06:00", "Wynford Port Store", "213 km", "-25 °C"],
            ["R4", "TR-14", "07:45", "Linmouth Bakery Hub", "57 km", "-18 °C"],
            ["R5", "TR-09", "09:30", "Carrow Foods", "176 km", "+4 °C"],
            ["R6", "TR-02", "13:00", "Pellham Dairy", "64 km", "+2 °C"],
            ["R7", "TR-05", "15:20", "Ashby Cross Retail Park", "119 km", "-22 °C"],
        ]
        xs = [0.08, 0.17, 0.28, 0.39, 0.66, 0.79]
        y = 0.87
        for j, h in enumerate(header):
            fig.text(xs[j], y, h, fontsize=9.5, weight="bold")
        y -= 0.03
        for row in rows:
            for j, cell in enumerate(row):
                fig.text(xs[j], y, cell, fontsize=9.5)
            y -= 0.026
        _paragraphs(
            fig,
            y - 0.03,
            [
                "## Notes for drivers",
                "Pre-cool the trailer for at least 45 minutes before loading starts.",
                "Maximum load per trailer is 26 pallets; keep a 10 cm air gap at the front bulkhead.",
                "Download the trailer temperature log at the destination and e-mail it to the transport office.",
                "Route R3 uses the coastal road; allow 20 minutes extra in winter.",
                "Saturday departures run on routes R1 and R4 only, two hours later than shown.",
            ],
        )
        pdf.savefig(fig)
        plt.close(fig)


def haccp_policy() -> None:
    with _pdf(OUT / "haccp_policy.pdf", "Food Safety and HACCP Policy (QCS-POL-004)", "Imogen Farrant") as pdf:
        fig = _page()
        fig.text(0.08, 0.94, "Food Safety and HACCP Policy", fontsize=15, weight="bold")
        _paragraphs(
            fig,
            0.90,
            [
                "Document: QCS-POL-004    Version: 3.2",
                "Approved by: Imogen Farrant, Quality Director",
                "Date of approval: 14 March 2026",
                "Next review due: March 2027",
                "",
                "## 1. Purpose",
                "This policy sets out how Quayside Cold Storage Ltd keeps stored food safe and legal,",
                "based on the seven HACCP principles, for every chamber and vehicle we operate.",
                "",
                "## 2. Critical limits",
                "Frozen product is accepted at goods-in only if its core temperature is -15 °C or colder.",
                "Chilled product is accepted only if its core temperature is +5 °C or colder.",
                "Ultra-low product must arrive at -50 °C or colder and is probed within 10 minutes.",
                "Any chamber that stays more than 3 °C above its set point for 15 minutes is an excursion.",
                "",
                "## 3. Monitoring",
                "Chamber temperatures are logged automatically every 5 minutes.",
                "Probe thermometers are calibrated every 6 months against a reference thermometer.",
                "The duty supervisor checks the logger dashboard at the start of each shift.",
            ],
        )
        pdf.savefig(fig)
        plt.close(fig)

        fig = _page()
        _paragraphs(
            fig,
            0.94,
            [
                "## 4. Verification and records",
                "Internal HACCP audits are carried out quarterly by the Quality team.",
                "An external audit against the storage and distribution standard takes place once a year.",
                "Temperature records and corrective-action forms are kept for 3 years.",
                "",
                "## 5. Training",
                "All warehouse staff complete Level 2 food hygiene training within 4 weeks of starting.",
                "Supervisors hold Level 3 HACCP certification, renewed every 3 years.",
                "",
                "## 6. Allergens and segregation",
                "Products labelled as containing nuts are stored on the lowest racking level only.",
                "Raw and ready-to-eat products are never stored in the same bay.",
            ],
        )
        fig.text(0.5, 0.04, "QCS-POL-004 v3.2 - page 2", ha="center", fontsize=8)
        pdf.savefig(fig)
        plt.close(fig)


SCAN_LINES = [
    "NOTICE TO ALL STAFF",
    "",
    "Ammonia Plant Shutdown for Annual Inspection",
    "",
    "The main ammonia compressor house will be shut down",
    "on Sunday 16 August 2026 from 06:00 to 14:00.",
    "",
    "During the shutdown all chambers are held by the",
    "standby glycol system. Do not open any chamber door",
    "for longer than 2 minutes. Goods-in and goods-out",
    "are suspended until 15:00.",
    "",
    "The contractor on site is Northgate Refrigeration.",
    "",
    "Questions: Duty Engineer Rhys Okonjo, extension 214.",
    "",
    "Issued by the Engineering Department.",
]


def scanned_notice() -> None:
    fig = plt.figure(figsize=A4, dpi=200)
    y = 0.9
    for line in SCAN_LINES:
        if line:
            fig.text(
                0.1,
                y,
                line,
                fontsize=15 if line.isupper() else 12.5,
                weight="bold" if line.isupper() or "Shutdown" in line else "normal",
            )
        y -= 0.035
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=200, facecolor="white")
    plt.close(fig)
    buf.seek(0)
    img = mpimg.imread(buf, format="png")[:, :, :3]
    grey = img.mean(axis=2)
    rng = np.random.RandomState(42)
    grey = np.clip(grey * 0.93 + 0.04 + rng.normal(0, 0.025, grey.shape), 0, 1)
    with _pdf(OUT / "scanned_notice.pdf", "", "") as pdf:
        page = plt.figure(figsize=A4)
        ax = page.add_axes((0, 0, 1, 1))
        ax.imshow(grey, cmap="gray", vmin=0, vmax=1, interpolation="nearest", aspect="auto")
        ax.axis("off")
        pdf.savefig(page)
        plt.close(page)


SUPERVISORS = ["Dana Whitlock", "Priya Ansell", "Tomasz Reyner", "Gwen Halloran", "Marcus Ebo", "Leah Corrigan"]
ZONES = [("Chill", [2, 3, 4]), ("Frozen", [-18, -20, -22]), ("Deep frozen", [-25, -28]), ("Ultra-low", [-60])]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September"]


def cold_rooms() -> None:
    rng = random.Random(2026)
    capacities = rng.sample(range(180, 640, 2), 40)
    areas = rng.sample(range(220, 790, 5), 40)
    out = [
        "# Cold Room Register - Saltmere Site",
        "",
        "One record per chamber. Set points are the controller set points; capacities are pallet positions.",
        "",
    ]
    for k, num in enumerate(range(101, 141)):
        zi = 3 if num in (108, 127) else rng.choice([0, 0, 1, 1, 1, 2])
        zone, points = ZONES[zi]
        sp = rng.choice(points)
        sp_txt = f"+{sp} °C" if sp > 0 else f"{sp} °C"
        levels = rng.randint(4, 7)
        evap = rng.randint(2, 6)
        doors = rng.randint(1, 3)
        day = rng.randint(1, 28)
        month = rng.choice(MONTHS)
        sup = rng.choice(SUPERVISORS)
        out += [
            f"## CR-{num}",
            "",
            f"Cold room CR-{num} is {'an' if zone[0] in 'AEIOU' else 'a'} {zone} chamber held at {sp_txt}. "
            f"It has {capacities[k]} pallet positions "
            f"on {levels} racking levels over a floor area of {areas[k]} m². Cooling is provided by {evap} "
            f"evaporator units and the room has {doors} door{'s' if doors > 1 else ''}. The last defrost "
            f"inspection was on {day} {month} 2026. Room supervisor: {sup}.",
            "",
        ]
    (OUT / "cold_rooms.md").write_text("\n".join(out), encoding="utf-8")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    tariff()
    trailer_schedule()
    haccp_policy()
    scanned_notice()
    cold_rooms()


if __name__ == "__main__":
    main()
