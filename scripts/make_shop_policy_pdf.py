"""Write examples/shop-policies/refund-policy.pdf: the Chinook store's refund policy, three pages of text.

The text below was written for relayrag's examples (no third-party text); the country rules are a simplified
illustration for a fictional store, not legal advice. The PDF is plain PDF 1.4 with the standard Helvetica
fonts (no embedded fonts, no images), so pdfplumber reads its text layer and every page number is real.
Run: python scripts/make_shop_policy_pdf.py [OUT]  (the file is committed; rerun only after editing the text).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

TITLE = "Chinook Music Store - Customer Refund Policy"
PAGES = [
    [("h", TITLE),
     ("p", "Effective 1 January 2023. Owner: Customer Support. This policy says when customers of the Chinook "
           "online music store get their money back for tracks, albums and music videos bought from us."),
     ("h2", "1. What can be refunded"),
     ("p", "Every purchase is digital content that is delivered as a download. A purchase that has not been "
           "downloaded or streamed yet can be refunded in full within 14 days of the invoice date. A track "
           "that is faulty (it does not play, it is cut short, or it is not the track that was ordered) is "
           "replaced or refunded at any time within 90 days of the invoice date, whether or not it was "
           "downloaded."),
     ("h2", "2. What cannot be refunded"),
     ("p", "Purchases that were downloaded and play correctly are not refunded after the download started, "
           "except where the customer's country gives a stronger right (section 3). Gift cards and store "
           "credit are not refunded in cash."),
     ("h2", "3. Customers by country"),
     ("p", "Where a customer lives decides which consumer law applies. The billing country on the invoice "
           "counts. Country rules are on page 2; they add to sections 1 and 2 and never take a right away.")],
    [("h", "3. Customers by country (continued)"),
     ("h2", "Refunds for customers in the USA"),
     ("p", "Customers in the USA have no statutory right to cancel a digital purchase, so this refund policy "
           "is all they get: a refund within 14 days if not downloaded, faulty tracks within 90 days. "
           "A customer in the USA may instead choose store credit of 110 percent of the price."),
     ("h2", "Refunds for customers in Canada"),
     ("p", "Customers in Canada get the refund to the original card within 30 days of the request. For "
           "customers in Quebec the store also follows the Consumer Protection Act on distance contracts: "
           "the price, taxes and cancellation terms are shown before payment."),
     ("h2", "Refunds for customers in Brazil"),
     ("p", "Customers in Brazil have a right of regret of 7 days for any online purchase under the Consumer "
           "Defense Code (article 49), also after the download started. Brazil refunds are the full amount, "
           "in reais, through the same payment method."),
     ("h2", "Refunds for customers in the European Union and the United Kingdom"),
     ("p", "Customers in a member state of the European Union (for example France, Germany, Portugal, the "
           "Czech Republic or Ireland) and in the United Kingdom have a 14-day right of withdrawal. It ends "
           "when a download starts after the customer agreed to immediate delivery at checkout."),
     ("h2", "Refunds for customers in other countries"),
     ("p", "Customers in any other country (for example Australia, Argentina, Chile or India) get sections 1 "
           "and 2 of this policy.")],
    [("h", "4. How to ask for a refund"),
     ("p", "Customers write to their support representative with the invoice number. Support answers within "
           "two working days. Approved refunds reach the customer within 10 working days."),
     ("h2", "5. Business customers"),
     ("p", "Customers who buy for a company (a company name on the invoice) get a credit note instead of a "
           "card refund, so that their accounting stays correct. Consumer withdrawal rights do not apply to "
           "business purchases."),
     ("h2", "6. Repeated refunds"),
     ("p", "A customer who asks for more than five refunds in twelve months is contacted by a support "
           "manager before the next refund; refunds for faulty tracks are never limited.")],
]

WIDTH, HEIGHT, MARGIN = 612, 792, 72
STYLE = {"h": ("F2", 15, 24), "h2": ("F2", 12, 20), "p": ("F1", 11, 15)}


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def page_stream(blocks: list[tuple[str, str]], number: int) -> bytes:
    lines, y = ["BT"], HEIGHT - MARGIN
    for kind, text in blocks:
        font, size, leading = STYLE[kind]
        wrapped = textwrap.wrap(text, 88 if kind == "p" else 70)
        y -= 6 if kind != "p" else 0
        for line in wrapped:
            lines.append(f"/{font} {size} Tf 1 0 0 1 {MARGIN} {y} Tm ({_escape(line)}) Tj")
            y -= leading
        y -= 6
    lines.append(f"/F1 9 Tf 1 0 0 1 {WIDTH // 2 - 20} 40 Tm (Page {number} of {len(PAGES)}) Tj")
    lines.append("ET")
    return "\n".join(lines).encode("latin-1")


def build() -> bytes:
    objects: list[bytes] = []
    n_pages = len(PAGES)
    # 1 catalog, 2 pages, 3 F1, 4 F2, then per page: page object, content stream
    kids = " ".join(f"{5 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    for i, blocks in enumerate(PAGES):
        stream = page_stream(blocks, i + 1)
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {WIDTH} {HEIGHT}] /Resources << /Font "
                       f"<< /F1 3 0 R /F2 4 0 R >> >> /Contents {6 + 2 * i} 0 R >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    info = len(objects) + 1
    objects.append(f"<< /Title ({_escape(TITLE)}) /Producer (relayrag scripts/make_shop_policy_pdf.py) >>".encode())
    out, offsets = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"), []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, info, xref)
    return bytes(out)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else (
        Path(__file__).resolve().parent.parent / "examples" / "shop-policies" / "refund-policy.pdf")
    target.write_bytes(build())
    print(f"wrote {target} ({target.stat().st_size} bytes, {len(PAGES)} pages)")
