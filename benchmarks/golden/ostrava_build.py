#!/usr/bin/env python3
"""Regenerate the `ostrava/` corpus (Ostrava Valley Water Cooperative) and check the golden set.

    python benchmarks/golden/ostrava_build.py            # write ostrava/*, then check ostrava.jsonl
    python benchmarks/golden/ostrava_build.py --check    # check only (corpus must already exist)

Every document is generated from the text in this file: Markdown, HTML and text files are written as they
are; PDFs are written by the small PDF writer below (standard Helvetica, WinAnsi encoding, no compression,
fixed dates, so the bytes are the same on every run); the scanned notice is rendered to an image with
Pillow (Liberation Mono) and embedded as a JPEG, with no text layer. Needs Pillow; the check needs
pdfplumber and bs4 (both in the project's venv).

The check verifies, for every answerable question, that each expected string occurs verbatim in the text of
the stated document and page (pdfplumber for PDFs, bs4 for HTML, the raw file otherwise; for the scanned PDF
the source text it was rendered from), and that the scanned PDF has no text layer.
"""
from __future__ import annotations

import io
import json
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "ostrava"
GOLD = HERE / "ostrava.jsonl"

CONTACT = ("Ostrava Valley Water Cooperative · Member Service Desk · +420 596 118 240 · "
           "desk@ovwc.example · Mon–Fri 07:30–16:00")

# --------------------------------------------------------------------------------------------------
# Text documents
# --------------------------------------------------------------------------------------------------

MEMBER_FAQ = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Member FAQ – Ostrava Valley Water Cooperative</title>
</head>
<body>
<h1>Member FAQ</h1>
<p>Answers to the questions members ask the Member Service Desk most often. Last updated 6 October 2026.</p>

<h2>How do I become a member of the cooperative?</h2>
<p>Any household or business connected to the cooperative's network can join. Fill in the membership form at
the Member Service Desk and pay the one-off membership share of CZK 1,500. The share is refunded when you
leave the cooperative, minus any unpaid bills.</p>

<h2>How long does a new connection take?</h2>
<p>A standard domestic connection (pipe diameter up to 32 mm) is completed within 25 working days of the
signed quote. Larger connections are scheduled individually with the Network Operations team.</p>

<h2>What should I do if I see water leaking in the street?</h2>
<p>Call the 24-hour emergency line 800 118 118. For a visible leak on public land a repair crew is on site
within 4 hours; a burst main or flooding is treated as priority one.</p>

<h2>How often is my water meter read?</h2>
<p>Meters are read every two months by a meter reader. Members can also submit their own reading through the
member portal between the 1st and the 5th day of the reading month.</p>

<h2>Can I pay my bill in instalments?</h2>
<p>Yes. A bill over CZK 4,000 can be split into up to three monthly instalments without interest. Apply to
the Member Service Desk before the due date.</p>

<h2>What happens if I pay late?</h2>
<p>A first reminder is sent 14 days after the due date. A late-payment fee of CZK 150 is charged from the
second reminder onwards.</p>

<h2>Is the tap water safe to drink?</h2>
<p>Yes. The water is tested every day at points across the network; see the Water Quality Sampling Plan for
details. The water in the valley is moderately hard, 2.1 mmol/l.</p>

<h2>Who elects the Board of Directors?</h2>
<p>The General Assembly of members elects the seven directors for a term of four years. Each member has one
vote, whatever the size of their consumption.</p>

<h2>When is the General Assembly held?</h2>
<p>The ordinary General Assembly meets once a year in the last week of May, in the Lesná community hall.</p>

<h2>How do I tell you that I am moving out?</h2>
<p>Tell the Member Service Desk at least 5 working days before the move. A meter reader takes a final reading
on the moving day and the final bill is sent within 10 working days.</p>

<h2>Can I get a rebate for a hidden leak on my property?</h2>
<p>Once in any five-year period a member may claim a rebate of 50% of the extra consumption caused by a
hidden underground leak, provided the leak is repaired within 30 days of its discovery.</p>

<h2>Can I get my meter tested?</h2>
<p>Yes. The meter is removed and tested by an accredited laboratory. If it is found accurate, the test fee
in the current tariff is charged; if it over-reads, the test is free and the bills are corrected.</p>

<footer><p>{CONTACT}</p></footer>
</body>
</html>
"""

STAFF_HANDBOOK = """# Staff Handbook

Ostrava Valley Water Cooperative · Version 2026.1 · Issued by Human Resources

This handbook sets out working time, leave, safety and allowance rules for all employees of the cooperative.

## 1. Working hours

The standard working week is 37.5 hours. Core hours for office staff are 09:00–14:30. Field crews start at
06:30 and finish at 15:00.

## 2. Annual leave

Annual leave depends on completed years of service at 1 January of the leave year.

| Length of service | Annual leave |
|---|---|
| 0–2 years | 20 days |
| 3–5 years | 23 days |
| 6–9 years | 25 days |
| 10 years or more | 28 days |

Up to 5 unused days may be carried over to the next year; carried-over days must be taken by 31 March.

## 3. Manual handling

Before lifting, check the weight of the load and follow the rule for its band.

| Load weight | Rule |
|---|---|
| up to 5 kg | One person, no special precautions |
| over 5 kg up to 25 kg | One person, bent-knee lift, at most 20 lifts per hour |
| over 25 kg up to 50 kg | Two persons |
| over 50 kg | Mechanical aid required (hoist or trolley) |

## 4. On-call allowance

Employees on the standby rota receive a weekly allowance that depends on the number of call-outs in that
week.

| Call-outs in the week | Allowance |
|---|---|
| none | CZK 1,200 |
| 1–3 | CZK 1,800 |
| 4 or more | CZK 2,600 |

## 5. Mileage for private cars

Business journeys in a private car are reimbursed per kilometre, by the distance driven in the calendar
month.

| Distance in the month | Rate |
|---|---|
| up to 1,000 km | CZK 5.20 per km |
| 1,001–2,500 km | CZK 4.40 per km |
| over 2,500 km | CZK 3.10 per km |

## 6. Sickness

Tell your supervisor before 08:00 on the first day of absence. A medical certificate is required from the
fourth calendar day of absence.

## 7. Protective equipment

Safety boots are replaced every 18 months and high-visibility jackets every 12 months, or sooner if damaged.

## 8. Training

Every employee completes at least 24 hours of training a year. The confined-space entry certificate must be
renewed every 3 years.

HR questions: Petra Hálová, HR Officer, extension 214.
"""

WATER_QUALITY = f"""# Water Quality Sampling Plan 2026

This plan describes how the Ostrava Valley Water Cooperative samples and tests drinking water in its
network during 2026.

## Sampling frequency

| Parameter | Where | How often |
|---|---|---|
| Free chlorine | 12 network points | daily |
| E. coli and coliform bacteria | 8 network points | weekly |
| Turbidity | Treatment plant outlet | continuously (online analyser) |
| Lead and copper | 6 consumer taps | twice a year |
| Full chemical analysis (including pesticides) | Treatment plant outlet | once a year, in March |

## Limits and targets

The target range for free chlorine at the network points is 0.05–0.30 mg/l. Turbidity at the plant outlet
must stay below 1.0 NTU; the analyser raises an alarm at 0.8 NTU.

## Laboratory

All samples except free chlorine are analysed by the Valley Analytical Laboratory in Kamenec, which is
accredited for drinking-water testing. Free chlorine is measured on site by the sampler.

## Publication

Results are published every month on the notice board at the cooperative's office and in the member portal.

{CONTACT}
"""

ANNUAL_REVIEW = """# Annual Review 2025

A short review of the Ostrava Valley Water Cooperative's year 2025, presented to the General Assembly in
May 2026.

## The year in numbers

- Members at 31 December 2025: 4,318
- Length of water mains: 212 km
- Water supplied: 1.46 million m³
- Non-revenue water (losses and unbilled use): 14.2%
- Investment: CZK 38.6 million
- Employees: 46

## Governance

Jana Veselá chaired the Board of Directors throughout 2025. The cooperative is managed day to day by the
General Manager, Martin Kolář.

## Main projects

The largest project of the year was the upgrade of the Dolní Brod pumping station, which received two new
pumps and a standby generator. We also replaced 3.8 km of cast-iron mains in Lesná and installed 640 new
remote-read meters.

## Outlook

For 2026 the Board has set the target of reducing non-revenue water below 12%.
"""

JA_KITEI = """# 検針業務規程

オストラバ・バレー水道協同組合

第1条（目的）
この規程は、オストラバ・バレー水道協同組合（以下「組合」という。）が行う水道メーターの検針業務について、必要な事項を定めることを目的とする。

第2条（定義）
この規程において「検針員」とは、組合の委託を受けて水道メーターの指示数を読み取る者をいう。

第3条（検針の周期）
検針は、2か月に1回行う。ただし、口径40ミリメートル以上のメーターについては、毎月検針する。

第4条（検針日）
検針は、地区ごとに定める定例日の前後2営業日以内に行う。

第5条（検針員証の携帯）
検針員は、検針の際に組合が発行する検針員証を携帯し、組合員から求められたときはこれを提示しなければならない。

第6条（メーターを確認できない場合）
メーターを確認できないときは、検針員は検針票を投函し、組合員に自己検針を依頼する。2回連続して検針できないときは、過去6か月の平均使用水量により使用水量を認定する。

第7条（異常値の通知）
使用水量が前回の使用水量の2倍以上又は2分の1以下であるときは、漏水等の可能性がある旨を組合員に通知する。

第8条（再検針）
組合員から検針値について申出があったときは、申出の日から3営業日以内に再検針を行う。

第9条（記録の保存）
検針記録は、5年間保存する。

第10条（所管）
この規程の所管は、お客様サービス課とする。

附則
この規程は、2026年4月1日から施行する。（2026年3月18日理事会決定）
"""

JA_FAQ = f"""よくあるご質問（組合員の皆さまへ）
オストラバ・バレー水道協同組合

Q1. 水道料金の支払方法は？
A. 口座振替、銀行振込、組合窓口での現金払いがご利用いただけます。クレジットカードはご利用いただけません。

Q2. 引っ越しのときの手続きは？
A. 転居の5営業日前までに組合員サービス窓口へご連絡ください。転居日に最終検針を行い、料金を精算します。

Q3. 水が濁っているときはどうすればよいですか？
A. 蛇口から3分程度水を流してください。改善しない場合は、24時間緊急ダイヤル 800 118 118 へご連絡ください。

Q4. 漏水で水道料金が高くなったときに減額はありますか？
A. 地下など発見が困難な漏水の場合、5年に1回に限り、増加した使用水量の50%を減額します。発見から30日以内に修理することが条件です。

Q5. 組合の出資金はいくらですか？
A. 1口1,500コルナです。脱退時に返還されます（未払いの料金がある場合は差し引きます）。

Q6. 検針員が来る日はわかりますか？
A. 次回の検針予定日は、前回の検針票に記載しています。

Q7. 水の硬度はどのくらいですか？
A. 2.1 mmol/L で、中程度の硬水です。

Q8. 料金の分割払いはできますか？
A. 4,000コルナを超える請求は、3回まで無利息で分割払いができます。支払期限までにお申し込みください。

Q9. 総会はいつ開かれますか？
A. 通常総会は毎年5月の最終週に開催します。

{CONTACT}
"""

# --------------------------------------------------------------------------------------------------
# Meter reading records (deterministic: a fixed LCG, no `random`)
# --------------------------------------------------------------------------------------------------

METER_IDS = [
    "M-1001", "M-1003", "M-1008", "M-1012", "M-1019", "M-1023", "M-1026", "M-1031", "M-1035", "M-1040",
    "M-1044", "M-1047", "M-1048", "M-1052", "M-1057", "M-1061", "M-1066", "M-1070", "M-1074", "M-1079",
    "M-1083", "M-1088", "M-1092", "M-1097", "M-1101", "M-1104", "M-1110", "M-1115", "M-1147", "M-1152",
    "M-1203", "M-1260", "M-1318", "M-1407", "M-1470", "M-1502", "M-1555", "M-1603", "M-1688", "M-1711",
]
STREETS = ["Birch Lane", "Orchard Row", "Station Road", "Upper Meadow", "Mill Road", "Quarry Lane",
           "Church Street", "Willow Close"]
READERS = ["R-03", "R-07", "R-11"]
SPECIAL = {
    "M-1074": "leak suspected (consumption more than twice the previous period), member notified",
    "M-1407": "seal broken, inspection booked",
    "M-1555": "meter not accessible, consumption estimated from the average",
}


def _lcg(seed: int):
    x = seed
    while True:
        x = (1103515245 * x + 12345) % (2 ** 31)
        yield x


def meter_records() -> list[dict]:
    lcg = _lcg(20260914)

    def g():
        return next(lcg) >> 16  # the low bits of this LCG are not random

    recs, used = [], {("Birch Lane", 12)}
    for i, mid in enumerate(METER_IDS):
        street = STREETS[g() % len(STREETS)]
        house = 1 + g() % 60
        while (street, house) in used and mid != "M-1047":
            house += 1
        used.add((street, house))
        day = 7 + i // 4
        reader = READERS[(i // 4) % 3]
        cons = 8 + g() % 70
        reading = 900 + g() % 5200
        if mid == "M-1047":
            street, house, reading, cons = "Birch Lane", 12, 3512, 41
        if mid == "M-1074":
            cons = 164
        if mid == "M-1555":
            cons = 36
        recs.append(dict(id=mid, street=street, house=house, day=day, reader=reader, reading=reading,
                         previous=reading - cons, consumption=cons, status=SPECIAL.get(mid, "normal")))
    return recs


def meter_log() -> str:
    lines = ["# Meter Reading Log – Zone B, September 2026", "",
             "Readings taken in the September 2026 reading cycle in Zone B (Lesná and Birch Hill). "
             "One record per meter; readings in cubic metres.", ""]
    for r in meter_records():
        lines.append(
            f"- Meter {r['id']} at {r['house']} {r['street']} was read on {r['day']} September 2026 by reader "
            f"{r['reader']}: reading {r['reading']:,} m³, previous reading {r['previous']:,} m³, "
            f"consumption {r['consumption']} m³, status: {r['status']}.")
    lines += ["", "Readings checked by the Customer Service Office on 21 September 2026.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# A minimal PDF writer (Helvetica / Helvetica-Bold, WinAnsiEncoding, uncompressed, deterministic)
# --------------------------------------------------------------------------------------------------

W, H = 595, 842


def _pdf_str(s: str) -> bytes:
    b = s.encode("cp1252")
    return b"(" + b.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _info_str(s: str) -> bytes:
    """Document-information strings: ASCII as a literal, anything else as UTF-16BE with a BOM."""
    if s.isascii():
        return _pdf_str(s)
    return b"<FEFF" + s.encode("utf-16-be").hex().upper().encode() + b">"


class Page:
    def __init__(self):
        self.ops: list[bytes] = []
        self.image: tuple[bytes, int, int] | None = None

    def text(self, x, y, s, size=10, bold=False):
        font = b"/F2" if bold else b"/F1"
        self.ops.append(b"BT " + font + b" %g Tf %g %g Td " % (size, x, y) + _pdf_str(s) + b" Tj ET")

    def line(self, x1, y1, x2, y2, width=0.6):
        self.ops.append(b"%g w %g %g m %g %g l S" % (width, x1, y1, x2, y2))

    def para(self, x, y, s, size=10, width=98, leading=13.5):
        """Wrapped paragraph; returns the y below it."""
        for ln in textwrap.wrap(s, width):
            self.text(x, y, ln, size)
            y -= leading
        return y - 4


def write_pdf(path: Path, pages: list[Page], info: dict[str, str]):
    objs: list[bytes] = []

    def add(b: bytes) -> int:
        objs.append(b)
        return len(objs)

    catalog = add(b"")  # filled later
    pages_id = add(b"")
    f1 = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    f2 = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    kids = []
    for p in pages:
        res = b"/Font << /F1 %d 0 R /F2 %d 0 R >>" % (f1, f2)
        ops = list(p.ops)
        if p.image:
            data, iw, ih = p.image
            im = add(b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
                     b"/BitsPerComponent 8 /Filter /DCTDecode /Length %d >>\nstream\n" % (iw, ih, len(data))
                     + data + b"\nendstream")
            res += b" /XObject << /Im1 %d 0 R >>" % im
            ops.insert(0, b"q %d 0 0 %d 0 0 cm /Im1 Do Q" % (W, H))
        content = b"\n".join(ops)
        c = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << %s >> "
                        b"/Contents %d 0 R >>" % (pages_id, W, H, res, c)))
    objs[pages_id - 1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids)
                          + b"] /Count %d >>" % len(kids))
    objs[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
    info_id = add(b"<< " + b" ".join(b"/" + k.encode() + b" " + _info_str(v) for k, v in info.items()) + b" >>")

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objs) + 1, catalog, info_id, xref)
    path.write_bytes(bytes(out))


DATE = "D:20261203090000Z"


def _info(title, subject="", author="Ostrava Valley Water Cooperative"):
    d = {"Title": title, "Author": author, "Creator": "ostrava_build.py", "CreationDate": DATE, "ModDate": DATE}
    if subject:
        d["Subject"] = subject
    return d


def ruled_table(p: Page, x0, y, cols, rows, size=9.5, row_h=17, bold_header=True):
    """cols: list of column widths; rows: list of tuples (first = header). Returns y below the table."""
    xs = [x0]
    for w in cols:
        xs.append(xs[-1] + w)
    top = y
    for ri, row in enumerate(rows):
        for ci, cell in enumerate(row):
            p.text(xs[ci] + 4, y - row_h + 5, cell, size, bold=bold_header and ri == 0)
        y -= row_h
    for ri in range(len(rows) + 1):
        yy = top - ri * row_h
        p.line(xs[0], yy, xs[-1], yy, 1.0 if ri in (0, 1, len(rows)) else 0.5)
    for x in xs:
        p.line(x, top, x, y, 0.5)
    return y - 14


def footer(p: Page, page_no: int, of: int):
    p.text(50, 40, CONTACT, 8)
    p.text(520, 26, f"Page {page_no} of {of}", 8)


def build_tariff(path: Path):
    p1, p2 = Page(), Page()
    p1.text(50, 790, "Water and Sewerage Tariff 2026", 18, bold=True)
    y = p1.para(50, 765, "Ostrava Valley Water Cooperative. This tariff applies to all supplies from 1 January "
                "2026 to 31 December 2026. It was adopted by the General Assembly on 28 May 2025. Prices are "
                "in Czech crowns (CZK) and exclude VAT; VAT of 12% is added to water and sewerage charges.")
    p1.text(50, y - 6, "Table 1. Volumetric charges", 11, bold=True)
    y = ruled_table(p1, 50, y - 14, [260, 150], [
        ("Service", "Price per m³"),
        ("Drinking water", "CZK 52.40"),
        ("Sewerage", "CZK 44.10"),
        ("Water and sewerage combined", "CZK 96.50"),
    ])
    p1.text(50, y - 6, "Table 2. Annual standing charge by meter size", 11, bold=True)
    y = ruled_table(p1, 50, y - 14, [110, 130, 170], [
        ("Meter size", "Nominal flow", "Standing charge per year"),
        ("DN 15", "2.5 m³/h", "CZK 780"),
        ("DN 20", "4 m³/h", "CZK 1,140"),
        ("DN 25", "6.3 m³/h", "CZK 1,690"),
        ("DN 32", "10 m³/h", "CZK 2,480"),
        ("DN 40", "16 m³/h", "CZK 3,950"),
        ("DN 50", "25 m³/h", "CZK 6,200"),
    ])
    p1.para(50, y, "The standing charge is billed in six equal parts with the bi-monthly bills. Members with "
            "two or more meters pay the standing charge for each meter.")
    footer(p1, 1, 2)

    p2.text(50, 790, "Table 3. Other charges", 11, bold=True)
    y = ruled_table(p2, 50, 780, [330, 120], [
        ("Item", "Charge"),
        ("Meter test at the member's request (meter found accurate)", "CZK 950"),
        ("Reconnection after disconnection for non-payment", "CZK 2,300"),
        ("Duplicate bill", "CZK 60"),
        ("Hydrant use for events, per day", "CZK 400"),
        ("Water tanker delivery, per trip", "CZK 1,850"),
    ])
    p2.para(50, y, "Payments are due 21 days after the date of the bill. Charges in Table 3 are invoiced "
            "separately and are not included in the bi-monthly bill.")
    footer(p2, 2, 2)
    write_pdf(path, [p1, p2], _info("Water and Sewerage Tariff 2026", "Tariff adopted by the General Assembly"))


STATIONS = [
    # name, code, location, pumps, capacity, interval, last overhaul
    ("Horní Mlýn", "PS-01", "Mill Road 3, Lesná", "3", "420", "6 months", "March 2024"),
    ("Kamenec", "PS-02", "Quarry Lane, Kamenec", "2", "180", "12 months", "October 2023"),
    ("Bílá North", "PS-03", "Forest Track 11, Bílá", "4", "610", "6 months", "June 2025"),
    ("Bílá South", "PS-04", "River Street 2, Bílá", "2", "240", "12 months", "January 2025"),
    ("Vrchy", "PS-05", "Hilltop Reservoir, Vrchy", "2", "95", "3 months", "August 2025"),
    ("Lipník", "PS-06", "Station Road 40, Lipník", "3", "310", "6 months", "May 2022"),
    ("Olšina", "PS-07", "Alder Grove, Olšina", "1", "60", "12 months", "November 2024"),
    ("Zátiší", "PS-08", "Lakeside 7, Zátiší", "2", "150", "12 months", "February 2021"),
    ("Dolní Brod", "PS-09", "Ford Lane 1, Dolní Brod", "5", "880", "3 months", "September 2025"),
    ("Rovná", "PS-10", "Upper Meadow 15, Rovná", "2", "200", "6 months", "April 2023"),
]


def build_stations(path: Path):
    p = Page()
    p.text(50, 790, "Pumping Station Register", 18, bold=True)
    y = p.para(50, 765, "Ostrava Valley Water Cooperative, Network Operations. The register lists the ten "
               "pumping stations of the network with their duty pumps, capacity, service interval and the "
               "date of the last full overhaul. Status as of 1 October 2026.")
    xs = [50, 130, 175, 320, 360, 400, 470]
    heads = ["Station", "Code", "Location", "Pumps", "m³/h", "Service every", "Last overhaul"]
    y -= 10
    for x, h in zip(xs, heads):
        p.text(x, y, h, 9, bold=True)
    y -= 18
    for row in STATIONS:
        for x, cell in zip(xs, row):
            p.text(x, y, cell, 9)
        y -= 15
    y -= 10
    y = p.para(50, y, "Capacity is the combined capacity of the duty pumps in cubic metres per hour. A station "
               "with a 3-month interval is inspected by the mechanical crew; all others by the duty "
               "technician. Overhaul reports are kept in the asset system.")
    p.para(50, y, "Stations PS-05 and PS-09 are fitted with AquaLift booster sets (see the booster pump "
           "manual). Questions about the register: Network Operations, extension 230.")
    write_pdf(path, [p], _info("Pumping Station Register", "Register of pumping stations, October 2026"))


MANUAL_COMMON = ("Both booster sets are built on a common stainless-steel frame with a control cabinet, "
                 "a membrane pressure vessel and isolating valves on every pump. This manual describes each "
                 "model on its own page; read the page for the model installed at your station.")


def _pump_page(model, pumps_word, flow, head, motor, service, precharge, inlet, seals, weight, where, page_no):
    p = Page()
    if page_no == 1:
        p.text(50, 790, "AquaLift VX-300 and VX-310 Booster Pump Sets", 16, bold=True)
        p.text(50, 770, "Operation and Maintenance Manual · Edition 4", 11)
        y = p.para(50, 745, MANUAL_COMMON)
    else:
        y = 790
    p.text(50, y - 6, f"AquaLift {model}", 14, bold=True)
    y -= 28
    for s in [
        f"The {model} is a {pumps_word}-pump booster set for residential blocks and small pressure zones.",
        f"The rated flow of the {model} is {flow} m³/h at a head of {head} m.",
        f"The {model} has {motor} kW each.",
        f"Service the {model} every {service} operating hours.",
        f"Set the pressure vessel pre-charge of the {model} to {precharge} bar.",
        f"The maximum inlet pressure of the {model} is {inlet} bar.",
        f"Replace the mechanical seals of the {model} every {seals} operating hours.",
        f"The {model} set weighs {weight} kg without water.",
        f"In the cooperative's network the {model} is installed at {where}.",
    ]:
        y = p.para(50, y, s)
    y = p.para(50, y - 6, "Before any maintenance, isolate the set electrically and close the inlet and outlet "
               "valves. Drain the pump casings through the drain plugs.")
    p.text(520, 26, f"Page {page_no} of 2", 8)
    return p


def build_manual(path: Path):
    pages = [
        _pump_page("VX-300", "two", "18", "48", "2 motors of 4.0", "2,000", "3.2", "6", "8,000", "186",
                   "the Vrchy pumping station (PS-05)", 1),
        _pump_page("VX-310", "three", "27", "62", "3 motors of 5.5", "1,500", "4.1", "10", "6,000", "264",
                   "the Dolní Brod pumping station (PS-09)", 2),
    ]
    write_pdf(path, pages, _info("AquaLift VX-300 and VX-310 Booster Pump Sets – Operation and Maintenance Manual"))


def build_policy(path: Path):
    p = Page()
    p.text(50, 790, "Leak Response Policy", 18, bold=True)
    p.text(50, 770, "Policy LRP-3 · Version 3.0 · Approved by the Board of Directors on 12 February 2026 "
           "(resolution 2026/07)", 9)
    p.text(50, 757, "Policy owner: Network Operations Manager", 9)
    y = 730
    sections = [
        ("1. Purpose", "This policy sets the targets for responding to leaks reported on the cooperative's "
                       "network and the duties of the staff who respond to them."),
        ("2. Priority classes", "Priority 1 (burst main, flooding or loss of supply to more than 50 "
                                "properties): a crew is on site within 2 hours, day or night. Priority 2 "
                                "(visible leak on public land): a crew is on site within 4 hours. Priority 3 "
                                "(leak reported on the member's side of the meter): an inspection is made "
                                "within 5 working days."),
        ("3. Deviations", "Any deviation from the targets in section 2 must be approved by the duty "
                          "Network Operations Manager and recorded in the incident log within 24 hours."),
        ("4. Informing members", "When a repair will interrupt supply for longer than 2 hours, the affected "
                                 "members are informed by SMS and a notice is posted at least 48 hours in "
                                 "advance, except for Priority 1 repairs."),
        ("5. Records", "Every leak is recorded in the incident log with the time of the report, the time the "
                       "crew arrived and the estimated volume lost. Incident records are kept for 10 years."),
        ("6. Review", "The Technical Committee reviews this policy every 2 years and proposes changes to the "
                      "Board of Directors."),
    ]
    for head, body in sections:
        p.text(50, y, head, 11, bold=True)
        y = p.para(50, y - 16, body)
        y -= 6
    p.text(50, 40, CONTACT, 8)
    write_pdf(path, [p], _info("Leak Response Policy", "Approved by the Board of Directors, resolution 2026/07, "
                               "12 February 2026", author="Board of Directors, Ostrava Valley Water Cooperative"))


SCANNED_TEXT = """OSTRAVA VALLEY WATER COOPERATIVE
Mill Street 27, Lesna

NOTICE OF PLANNED WATER SUPPLY INTERRUPTION
Ref. OVWC/N/2026/118          Date of notice: 2 November 2026

Dear members,

The water supply will be interrupted on Tuesday 17 November 2026
from 08:00 to 15:30 while we replace 320 m of the DN 150 water
main under Orchard Row.

Affected streets:
  - Birch Lane (all numbers)
  - Orchard Row (all numbers)
  - Station Road, numbers 1 to 48
  - Upper Meadow, numbers 2 to 20 (even numbers only)

A water tanker will stand at the corner of Birch Lane and
Orchard Row from 08:00 until the supply is restored.

After the supply is restored the water may be discoloured for a
short time. Run the cold tap for 3 minutes before use.

If the work cannot be carried out because of the weather, the
replacement date is Thursday 19 November 2026.

We apologise for the inconvenience.

Tomas Rychly
Network Operations Manager
Emergency line (24 hours): 800 118 118
"""


def build_scanned(path: Path):
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    dpi = 150
    iw, ih = int(8.27 * dpi), int(11.69 * dpi)
    img = Image.new("L", (iw, ih), 255)
    d = ImageDraw.Draw(img)
    font = ImageFont.truetype("/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf", 25)
    y = 150
    for line in SCANNED_TEXT.splitlines():
        d.text((130, y), line, fill=30, font=font)
        y += 38
    img = img.rotate(0.5, resample=Image.BICUBIC, fillcolor=250)
    img = img.filter(ImageFilter.GaussianBlur(0.7))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=70, optimize=False)
    p = Page()
    p.image = (buf.getvalue(), iw, ih)
    write_pdf(path, [p], {"Creator": "ostrava_build.py (scanner simulation)", "CreationDate": DATE,
                          "ModDate": DATE})


TEXT_FILES = {
    "member-faq.html": MEMBER_FAQ,
    "staff-handbook.md": STAFF_HANDBOOK,
    "water-quality-plan.md": WATER_QUALITY,
    "annual-review-2025.md": ANNUAL_REVIEW,
    "kenshin-kitei.md": JA_KITEI,
    "faq-ja.txt": JA_FAQ,
}
PDF_BUILDERS = {
    "tariff-2026.pdf": build_tariff,
    "pumping-stations.pdf": build_stations,
    "booster-pump-manual.pdf": build_manual,
    "leak-response-policy.pdf": build_policy,
    "supply-interruption-notice.pdf": build_scanned,
}
SCANNED = {"supply-interruption-notice.pdf": SCANNED_TEXT}


def build():
    OUT.mkdir(exist_ok=True)
    for name, text in TEXT_FILES.items():
        (OUT / name).write_text(text, encoding="utf-8")
    (OUT / "meter-readings-2026-09.md").write_text(meter_log(), encoding="utf-8")
    for name, fn in PDF_BUILDERS.items():
        fn(OUT / name)


# --------------------------------------------------------------------------------------------------
# Check the golden set
# --------------------------------------------------------------------------------------------------

def doc_text(name: str, page: int) -> str:
    path = OUT / name
    if name in SCANNED:
        return SCANNED[name]
    if name.endswith(".pdf"):
        import pdfplumber
        with pdfplumber.open(path) as pdf:
            return pdf.pages[page - 1].extract_text() or ""
    if name.endswith(".html"):
        from bs4 import BeautifulSoup
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        return (soup.title.get_text() if soup.title else "") + "\n" + soup.get_text(" ")
    return path.read_text(encoding="utf-8")


def check() -> int:
    import pdfplumber

    errors = 0
    with pdfplumber.open(OUT / "supply-interruption-notice.pdf") as pdf:
        if any(pg.chars for pg in pdf.pages):
            print("ERROR: scanned PDF has a text layer")
            errors += 1
    items = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = set()
    for it in items:
        for k in ("id", "question", "answers", "doc", "page", "category", "unanswerable"):
            if k not in it:
                print(f"ERROR {it.get('id')}: missing {k}")
                errors += 1
        if it["id"] in ids:
            print(f"ERROR duplicate id {it['id']}")
            errors += 1
        ids.add(it["id"])
        if not (OUT / it["doc"]).exists():
            print(f"ERROR {it['id']}: no document {it['doc']}")
            errors += 1
            continue
        if it["unanswerable"]:
            if it["answers"]:
                print(f"ERROR {it['id']}: unanswerable with answers")
                errors += 1
            continue
        if not it["answers"]:
            print(f"ERROR {it['id']}: answerable without answers")
            errors += 1
        pages = it["page"] if isinstance(it["page"], list) else [it["page"]]
        text = "\n".join(doc_text(it["doc"], p) for p in pages)
        for a in it["answers"]:
            if a not in text:
                print(f"ERROR {it['id']}: {a!r} not in {it['doc']} p.{it['page']}")
                errors += 1
    print(f"{len(items)} questions checked, {errors} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    if "--check" not in sys.argv:
        build()
    sys.exit(check() if GOLD.exists() else 0)
