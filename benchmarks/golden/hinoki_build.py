#!/usr/bin/env python3
"""Build the PDF of the hinoki golden set deterministically.

    /work/main/.venv/bin/python benchmarks/golden/hinoki_build.py

Writes hinoki/08_senpaku_gaiyo.pdf (3 pages, A4, a real text PDF in Japanese) with matplotlib's PDF
backend, TrueType/CID embedding (pdf.fonttype 42) of Noto Sans CJK (Debian package fonts-noto-cjk).
The other documents in hinoki/ are hand-written text files and are not generated.
Every sentence is wrapped only between sentences or at a clause boundary where possible, so the
answer spans in hinoki.jsonl do not cross a line break.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("SOURCE_DATE_EPOCH", "1767225600")  # 2026-01-01, fixed for reproducible output
import matplotlib

matplotlib.use("pdf")
matplotlib.rcParams["pdf.fonttype"] = 42
matplotlib.rcParams["pdf.compression"] = 6
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager as fm  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "hinoki" / "08_senpaku_gaiyo.pdf"
FONT_CANDIDATES = [
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
]
FONT_BOLD = "/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc"

WIDTH = 46  # characters per line at 10.5 pt on A4 with 17 mm margins


def font(bold=False):
    for p in ([FONT_BOLD] if bold else []) + FONT_CANDIDATES:
        if Path(p).exists():
            return fm.FontProperties(fname=p)
    sys.exit("no Japanese font: apt-get install -y fonts-noto-cjk")


def wrap(par):
    """Wrap a paragraph: break after 。 when the next sentence would overflow, else hard at WIDTH."""
    lines, cur = [], ""
    sentences = [s + "。" for s in par.split("。") if s] if "。" in par else [par]
    for s in sentences:
        if len(cur) + len(s) <= WIDTH:
            cur += s
            continue
        if cur:
            lines.append(cur)
            cur = ""
        while len(s) > WIDTH:
            # prefer a break after 、 within the line
            cut = s.rfind("、", 0, WIDTH)
            cut = cut + 1 if cut > WIDTH // 2 else WIDTH
            lines.append(s[:cut])
            s = s[cut:]
        cur = s
    if cur:
        lines.append(cur)
    return lines


P1 = [
    ("h1", "保有船舶の概要"),
    ("p", "檜島汽船株式会社 運航部　令和8年1月15日"),
    ("p", "本資料は、当社が保有する3隻の船舶の主要目、設備及び運航実績をまとめたものである。"
          "数値は令和8年1月1日現在の船舶検査証書及び社内記録による。"),
    ("h2", "1. フェリーひのき（船舶コードHK-01）"),
    ("p", "フェリーひのきは、平成21年4月に就航した旅客船兼自動車渡船である。"),
    ("p", "総トン数は698トン、全長は62.5メートル、幅は13.2メートルである。"),
    ("p", "旅客定員は450名、車両積載能力は乗用車換算で38台である。"),
    ("p", "主機関はMZ-6L28型ディーゼル機関2基で、航海速力は13.5ノットである。"),
    ("p", "建造は波多野造船株式会社汐見工場による。"),
    ("p", "客室は2層で、1階に椅子席と桟敷席、2階に展望ラウンジがある。"),
    ("p", "客室階と車両甲板を結ぶエレベーター1基を備える。"),
    ("p", "ペットルームは1階後部にある。"),
    ("p", "客室では無料Wi-Fi（SSID：HINOKI-FREE）を提供している。"),
    ("p", "次回の定期検査は、令和8年6月8日から6月19日まで波多野造船汐見工場で行う予定である。"),
    ("p", "検査期間中は、フェリーしらさぎ1隻による代替ダイヤで運航する。"),
    ("h2", "2. 船舶に共通する安全設備"),
    ("p", "フェリー2隻には、膨脹式救命いかだ（定員25名）を各20台、救命胴衣を旅客定員の110%以上搭載する。"),
    ("p", "船橋には、レーダー2台、AIS（船舶自動識別装置）、GPSプロッター及びVHF無線電話を備える。"),
    ("p", "車両甲板には固定式の泡消火装置と火災探知装置を備える。"),
]
P2 = [
    ("h2", "3. フェリーしらさぎ（船舶コードHK-02）"),
    ("p", "フェリーしらさぎは、平成25年7月に就航した旅客船兼自動車渡船である。"),
    ("p", "総トン数は698トン、全長は62.5メートル、幅は13.2メートルである。"),
    ("p", "旅客定員は420名、車両積載能力は乗用車換算で38台である。"),
    ("p", "主機関はMZ-6L28型ディーゼル機関2基で、航海速力は13.8ノットである。"),
    ("p", "建造費は18億4,000万円で、このうち約6億円について国の離島航路補助を受けた。"),
    ("p", "客室は2層で、1階に椅子席と桟敷席、2階に展望ラウンジがある。"),
    ("p", "ペットルームは1階前部にある。"),
    ("p", "授乳室を1階に備える。"),
    ("p", "令和5年度に主機関2基のオーバーホールを実施した。"),
    ("h2", "4. 高速艇あおば（船舶コードHS-3）"),
    ("p", "高速艇あおばは、平成30年3月に就航した旅客専用の高速艇である。"),
    ("p", "総トン数は19トン、全長は18.2メートルである。"),
    ("p", "旅客定員は68名で、車両は積載しない。"),
    ("p", "推進装置はウォータージェット推進（AJ-900型）2基で、航海速力は28ノット、最高速力は32ノットである。"),
    ("p", "建造は汐見マリン工業株式会社による。"),
    ("p", "客室は1層の椅子席のみで、売店及びペットルームはない。"),
    ("p", "高速艇は、波高1.5メートル以上が見込まれる場合は運航しない。"),
]
TABLE_HEAD = ["項目", "ひのき", "しらさぎ", "あおば"]
TABLE = [
    ["船舶コード", "HK-01", "HK-02", "HS-3"],
    ["就航", "平成21年4月", "平成25年7月", "平成30年3月"],
    ["総トン数", "698トン", "698トン", "19トン"],
    ["旅客定員", "450名", "420名", "68名"],
    ["車両（乗用車換算）", "38台", "38台", "なし"],
    ["航海速力", "13.5ノット", "13.8ノット", "28ノット"],
    ["売店", "あり", "あり", "なし"],
    ["エレベーター", "あり", "なし", "なし"],
    ["多機能トイレ", "あり", "あり", "なし"],
]
PERF_HEAD = ["船舶", "運航回数", "旅客輸送人員", "車両航送台数", "燃料消費量"]
PERF = [
    ["ひのき", "2,184回", "148,300人", "21,460台", "1,120kL"],
    ["しらさぎ", "2,190回", "131,950人", "19,870台", "1,085kL"],
    ["あおば", "1,402回", "41,260人", "―", "298kL"],
]
P3_AFTER = [
    ("p", "令和6年度の欠航率は、フェリー全体で2.8%、高速艇で9.6%であった。"),
    ("p", "高速艇の欠航の主な理由は、冬季の季節風による波高の上昇である。"),
    ("p", "フェリーしらさぎは船齢が13年を超えたため、代替となる新造船の検討を令和8年度から開始する。"),
    ("p", "問い合わせ先：運航部（0865-41-7330）"),
]


def draw_blocks(fig, blocks, y):
    for kind, text in blocks:
        if kind == "h1":
            fig.text(0.08, y, text, fontproperties=font(True), fontsize=16)
            y -= 0.040
        elif kind == "h2":
            y -= 0.008
            fig.text(0.08, y, text, fontproperties=font(True), fontsize=12.5)
            y -= 0.030
        else:
            for line in wrap(text):
                fig.text(0.08, y, line, fontproperties=font(), fontsize=10.5)
                y -= 0.022
            y -= 0.004
    return y


def draw_table(fig, head, rows, y, xs):
    for x, h in zip(xs, head):
        fig.text(x, y, h, fontproperties=font(True), fontsize=10)
    y -= 0.006
    fig.add_artist(plt.Line2D([0.08, 0.92], [y, y], color="black", linewidth=0.8))
    y -= 0.020
    for r in rows:
        for x, c in zip(xs, r):
            fig.text(x, y, c, fontproperties=font(), fontsize=10)
        y -= 0.024
    fig.add_artist(plt.Line2D([0.08, 0.92], [y + 0.012, y + 0.012], color="black", linewidth=0.8))
    return y - 0.010


def page_footer(fig, n):
    fig.text(0.5, 0.03, f"保有船舶の概要　{n}/3", fontproperties=font(), fontsize=8, ha="center")


def main():
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {"Title": "保有船舶の概要（檜島汽船株式会社）", "Author": "檜島汽船株式会社 運航部",
            "Subject": "フェリーひのき・フェリーしらさぎ・高速艇あおば", "Creator": "hinoki_build.py",
            "Producer": "matplotlib", "CreationDate": None}
    with PdfPages(OUT, metadata=meta) as pdf:
        fig = plt.figure(figsize=(8.27, 11.69))
        draw_blocks(fig, P1, 0.93)
        page_footer(fig, 1)
        pdf.savefig(fig)
        plt.close(fig)

        fig = plt.figure(figsize=(8.27, 11.69))
        draw_blocks(fig, P2, 0.93)
        page_footer(fig, 2)
        pdf.savefig(fig)
        plt.close(fig)

        fig = plt.figure(figsize=(8.27, 11.69))
        y = draw_blocks(fig, [("h2", "5. 主要目・設備の比較")], 0.93)
        y = draw_table(fig, TABLE_HEAD, TABLE, y, [0.08, 0.38, 0.56, 0.74])
        y = draw_blocks(fig, [("h2", "6. 令和6年度 運航実績")], y - 0.02)
        y = draw_table(fig, PERF_HEAD, PERF, y, [0.08, 0.26, 0.42, 0.60, 0.78])
        draw_blocks(fig, P3_AFTER, y - 0.02)
        page_footer(fig, 3)
        pdf.savefig(fig)
        plt.close(fig)
    print("wrote", OUT, OUT.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
