"""Build the Japanese PDF of the kaede golden set deterministically.

Run with the project's venv (matplotlib), e.g.
    /work/main/.venv/bin/python benchmarks/golden/kaede_build.py
Needs a Japanese font (Debian: fonts-noto-cjk). Writes kaede/suishitsu_houkoku_r6.pdf.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("SOURCE_DATE_EPOCH", "1751328000")

import matplotlib  # noqa: E402

matplotlib.use("pdf")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "kaede" / "suishitsu_houkoku_r6.pdf"
FONT_CANDIDATES = [
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
]

# Each page: list of (kind, text) where kind is "title", "h", "p" (one line) or "row" (table cells).
PAGE1 = [
    ("title", "令和６年度 水質検査結果の概要"),
    ("p", "桜野市上下水道局 水質検査センター　2025年6月16日公表"),
    ("p", ""),
    ("h", "1. はじめに"),
    ("p", "桜野市上下水道局では、水道法に基づき毎年度「水質検査計画」を策定し、水源から蛇口までの水質"),
    ("p", "を検査しています。この資料は、令和６年度（2024年4月〜2025年3月）に実施した水質検査の結果"),
    ("p", "をまとめたものです。令和６年度は、すべての検査地点で水道法の水質基準51項目を満たしました。"),
    ("p", ""),
    ("h", "2. 浄水場の概要"),
    ("p", "（1）東浄水場"),
    ("p", "東浄水場は、桜川の表流水を水源とし、凝集沈殿・急速ろ過方式で浄水処理を行っています。"),
    ("p", "施設能力は1日あたり42,000㎥で、令和６年度の1日平均配水量は31,850㎥でした。"),
    ("p", "夏季のかび臭対策として、粉末活性炭の注入設備を備えています。"),
    ("p", "東浄水場は、平成30年3月に品質マネジメントシステムの国際規格ISO 9001の認証を取得しました。"),
    ("p", ""),
    ("p", "（2）西浄水場"),
    ("p", "西浄水場は、深井戸8本から取水する地下水を水源とし、除鉄・除マンガンろ過方式で浄水処理を"),
    ("p", "行っています。施設能力は1日あたり18,500㎥で、令和６年度の1日平均配水量は12,430㎥でした。"),
    ("p", "西浄水場の水は、東浄水場の水に比べて硬度が高いのが特徴です。"),
    ("p", ""),
    ("h", "3. 検査の体制"),
    ("p", "水質検査は、水質検査センター（所長 中川 浩二）が行っています。検査地点は、2つの浄水場の"),
    ("p", "浄水のほか、市内24か所の給水栓（蛇口）です。給水栓のうち6か所には自動水質監視装置を設置し、"),
    ("p", "色・濁り・残留塩素を連続して監視しています。"),
    ("p", ""),
    ("p", "検査の頻度は次のとおりです。"),
    ("p", "・毎日検査（色、濁り、消毒の残留効果）：給水栓24か所で毎日"),
    ("p", "・月1回の検査：一般細菌、大腸菌、塩化物イオン、有機物など9項目"),
    ("p", "・年4回の検査：水質基準の全51項目"),
    ("p", "・PFOS及びPFOA：東浄水場・西浄水場とも年4回"),
    ("p", ""),
    ("p", "令和６年度に実施した検査の総数は、延べ14,872件でした。"),
]

PAGE2 = [
    ("title", "4. 主な検査項目の結果（令和６年度平均値、浄水）"),
    ("p", ""),
    ("row", ["検査項目", "東浄水場", "西浄水場", "水質基準値"]),
    ("row", ["一般細菌", "0個/mL", "0個/mL", "100個/mL以下"]),
    ("row", ["大腸菌", "不検出", "不検出", "検出されないこと"]),
    ("row", ["硝酸態窒素", "0.62mg/L", "2.35mg/L", "10mg/L以下"]),
    ("row", ["塩化物イオン", "9.8mg/L", "21.4mg/L", "200mg/L以下"]),
    ("row", ["硬度", "48mg/L", "112mg/L", "300mg/L以下"]),
    ("row", ["鉄", "0.01mg/L未満", "0.03mg/L", "0.3mg/L以下"]),
    ("row", ["マンガン", "0.001mg/L未満", "0.004mg/L", "0.05mg/L以下"]),
    ("row", ["濁度", "0.05度", "0.1度未満", "2度以下"]),
    ("row", ["pH値", "7.4", "7.6", "5.8以上8.6以下"]),
    ("row", ["PFOS及びPFOA", "3ng/L", "12ng/L", "50ng/L以下"]),
    ("row", ["残留塩素", "0.45mg/L", "0.38mg/L", "0.1mg/L以上"]),
    ("p", ""),
    ("p", "※ 残留塩素の基準値は、水道法施行規則に定める給水栓での保持すべき値です。"),
    ("p", "※ PFOS及びPFOAの基準値は、令和8年4月1日から水質基準に位置付けられる値です。"),
    ("p", ""),
    ("h", "5. 結果についての説明"),
    ("p", "硬度は、水に含まれるカルシウムとマグネシウムの量を示すもので、味に影響します。一般に、"),
    ("p", "硬度が10〜100mg/L程度の水がおいしいとされています。西浄水場の水は地下水のため硬度が"),
    ("p", "やや高く、やかんなどに白い付着物（水あか）が残りやすくなりますが、健康上の問題はありません。"),
    ("p", ""),
    ("p", "西浄水場のPFOS及びPFOAの値は12ng/Lで、基準値（50ng/L以下）を下回っていますが、"),
    ("p", "東浄水場よりも高い値です。このため、令和７年度から西浄水場の深井戸ごとの検査を年4回から"),
    ("p", "毎月に増やします。値の上昇がみられた場合は、当該深井戸からの取水を停止します。"),
    ("p", ""),
    ("p", "給水栓24か所の残留塩素は、最も低い地点（若葉地区の末端給水栓）で0.21mg/L、最も高い地点"),
    ("p", "（東浄水場に近い本町地区）で0.62mg/Lでした。すべての地点で0.1mg/L以上を保持していました。"),
]

PAGE3 = [
    ("title", "6. 水質に関するお問い合わせ"),
    ("p", "令和６年度に寄せられた水質に関するお問い合わせは146件でした。内訳は次のとおりです。"),
    ("p", "・赤い水、濁った水：58件"),
    ("p", "・におい（かび臭、塩素臭）：31件"),
    ("p", "・白い水（空気の混入）：22件"),
    ("p", "・水あか、付着物：19件"),
    ("p", "・その他（味、異物など）：16件"),
    ("p", "赤い水の多くは、断水工事の後や、長期間水を使わなかった後に発生したものでした。"),
    ("p", ""),
    ("h", "7. 水安全計画"),
    ("p", "局は、水源から給水栓までの危害を分析し管理する「水安全計画」を平成28年4月に策定し、"),
    ("p", "令和５年10月に第2版に改訂しました。令和６年度は、東浄水場の原水でかび臭物質（2-MIB）が"),
    ("p", "8月に最大9ng/L検出されたため、計画に基づき粉末活性炭を17日間注入しました。"),
    ("p", "浄水の2-MIBは、すべて水質基準（10ng/L以下）を満たしました。"),
    ("p", ""),
    ("h", "8. 鉛製給水管の解消"),
    ("p", "市内には、昭和50年代以前に布設された鉛製給水管が令和７年3月末時点で約2,300件残っています。"),
    ("p", "鉛製給水管は、朝一番の水など長時間滞留した水で鉛が溶け出すおそれがあるため、局は"),
    ("p", "令和12年度末までに公道部分の鉛製給水管をすべて解消することを目標に、布設替えを進めています。"),
    ("p", "令和６年度の解消件数は386件でした。"),
    ("p", "ご家庭で朝一番に水を使う際は、バケツ1杯程度（約10リットル）の水を飲用以外に使ってください。"),
    ("p", ""),
    ("h", "9. 今後の予定"),
    ("p", "令和７年度の水質検査計画は、2025年3月28日に公表しました。令和７年度は、検査地点に"),
    ("p", "南浜地区の給水栓を1か所追加し、給水栓の検査地点を25か所とします。"),
    ("p", "水質検査センターの建物の耐震改修は令和８年度に予定していますが、工事期間中の検査の"),
    ("p", "外部委託先は決まっていません。"),
    ("p", ""),
    ("p", "お問い合わせ：桜野市上下水道局 水質検査センター　電話 0299-41-7460"),
]


def font_path() -> str:
    for cand in FONT_CANDIDATES:
        if Path(cand).exists():
            return cand
    sys.exit("no Japanese font found: install fonts-noto-cjk")


def draw_page(pdf: PdfPages, items: list, page_no: int) -> None:
    fig = plt.figure(figsize=(8.27, 11.69))
    y = 0.93
    col_x = [0.10, 0.36, 0.56, 0.76]
    for kind, text in items:
        if kind == "title":
            fig.text(0.08, y, text, fontsize=15)
            y -= 0.035
        elif kind == "h":
            fig.text(0.08, y, text, fontsize=12)
            y -= 0.026
        elif kind == "row":
            for x, cell in zip(col_x, text):
                fig.text(x, y, cell, fontsize=10.5)
            y -= 0.026
        else:
            fig.text(0.08, y, text, fontsize=10)
            y -= 0.022 if text else 0.012
    fig.text(0.5, 0.04, f"- {page_no} -", fontsize=9, ha="center")
    pdf.savefig(fig)
    plt.close(fig)


def main() -> None:
    fp = font_path()
    font_manager.fontManager.addfont(fp)
    name = font_manager.FontProperties(fname=fp).get_name()
    matplotlib.rcParams["font.family"] = name
    matplotlib.rcParams["pdf.fonttype"] = 42
    meta = {"Title": "令和6年度 水質検査結果の概要", "Author": "桜野市上下水道局 水質検査センター", "CreationDate": None}
    with PdfPages(OUT, metadata=meta) as pdf:
        for i, page in enumerate([PAGE1, PAGE2, PAGE3], start=1):
            draw_page(pdf, page, i)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
