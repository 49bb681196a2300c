"""Build the three PDFs of the blind Tamarin Bay Ferries golden corpus (benchmarks/golden/tamarin/).

Uses only matplotlib (already in the project venv): each page is an A4 figure with text placed line by line;
TrueType (Type 42) fonts keep the text extractable. Run: .venv/bin/python benchmarks/golden/tamarin_build.py
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

matplotlib.rcParams["pdf.fonttype"] = 42
matplotlib.rcParams["font.family"] = "DejaVu Sans"

OUT = Path(__file__).resolve().parent / "tamarin"
W, H = 8.27, 11.69
LEFT = 0.09
LINE = 0.0165


class Page:
    def __init__(self, pdf: PdfPages, footer: str, number: int):
        self.pdf, self.footer, self.number = pdf, footer, number
        self.fig = plt.figure(figsize=(W, H))
        self.y = 0.93

    def heading(self, text: str, size: float = 15) -> None:
        self.fig.text(LEFT, self.y, text, fontsize=size, fontweight="bold", va="top")
        self.y -= LINE * (size / 8.5)

    def para(self, text: str, width: int = 98, size: float = 9.5) -> None:
        for line in textwrap.wrap(text, width):
            self.fig.text(LEFT, self.y, line, fontsize=size, va="top")
            self.y -= LINE
        self.y -= LINE * 0.6

    def row(self, cells: list[str], xs: list[float], bold: bool = False, size: float = 9.5) -> None:
        for cell, x in zip(cells, xs):
            self.fig.text(x, self.y, cell, fontsize=size, va="top", fontweight="bold" if bold else "normal")
        self.y -= LINE * 1.15

    def gap(self, n: float = 1.0) -> None:
        self.y -= LINE * n

    def close(self) -> None:
        self.fig.text(LEFT, 0.04, f"{self.footer}    Page {self.number}", fontsize=7.5, color="0.35")
        self.pdf.savefig(self.fig)
        plt.close(self.fig)


def fleet() -> None:
    footer = "Tamarin Bay Ferries Ltd — Fleet Technical Particulars — November 2026"
    with PdfPages(OUT / "fleet-particulars.pdf", metadata={"Title": "Fleet Technical Particulars",
                                                           "Author": "Ruth Anand"}) as pdf:
        p = Page(pdf, footer, 1)
        p.heading("Fleet Technical Particulars")
        p.para("Issued by the Technical Department, Harbour House, Port Ellery. Compiled by Ruth Anand, Technical "
               "Superintendent, November 2026. These particulars are for information; the ship's certificates "
               "remain the authority for anything to do with safety or manning.")
        p.para("The company operates two sister ships on the main Port Ellery–Gullhaven route and one smaller "
               "vessel on the Sorrel Island shuttle. The two sister ships were ordered from the same yard to "
               "almost the same design; the second was lengthened slightly during construction after the "
               "first year of operating the first showed that more car deck space was needed.")
        p.gap()
        p.heading("MV Kestrel Point", 12)
        p.para("MV Kestrel Point is a double-ended roll-on/roll-off passenger and vehicle ferry built in 2014 by "
               "Aldermoor Shipbuilders at Tyneford. She has a length overall of 62.4 metres and a beam of 15.2 "
               "metres, and her loaded draught is 2.9 metres. Two diesel-electric propulsion units, one at each "
               "end, give her a service speed of 13.5 knots. She is certificated to carry 350 passengers and 42 "
               "cars, and her gross tonnage is 1,480.")
        p.para("Her air draught, measured from the waterline to the top of the mast, is 21.3 metres, which "
               "leaves a clearance of just under two metres beneath the Ellery road bridge at the highest "
               "spring tides. The vehicle deck has a clear height of 4.6 metres over the two centre lanes.")
        p.para("Her home berth is Port Ellery, where she lies overnight. The main engines are rated at 1,150 kW "
               "each.")
        p.close()

        p = Page(pdf, footer, 2)
        p.heading("MV Heron Point", 12)
        p.para("MV Heron Point is a double-ended roll-on/roll-off passenger and vehicle ferry built in 2016 by "
               "Aldermoor Shipbuilders at Tyneford. She has a length overall of 64.1 metres and a beam of 15.6 "
               "metres, and her loaded draught is 3.0 metres. Two diesel-electric propulsion units, one at each "
               "end, give her a service speed of 14.0 knots. She is certificated to carry 380 passengers and 46 "
               "cars, and her gross tonnage is 1,530.")
        p.para("Her café was enlarged in 2021, taking space from the former crew mess. The vehicle deck has a "
               "clear height of 4.6 metres over the two centre lanes.")
        p.para("Her home berth is Gullhaven, where she lies overnight. The main engines are rated at 1,250 kW "
               "each.")
        p.gap()
        p.heading("MV Tamarin Spirit", 12)
        p.para("MV Tamarin Spirit is a single-ended passenger launch built in 1998 and bought by the company in "
               "2009. She has a length overall of 38.5 metres and is certificated to carry 180 passengers. She "
               "carries no vehicles. She normally runs the Gullhaven–Sorrel Island shuttle and acts as relief "
               "vessel on the main route when one of the sister ships is out of service.")
        p.close()


def fares() -> None:
    footer = "Tamarin Bay Ferries Ltd — Fares from 1 April 2027"
    with PdfPages(OUT / "fares-2027.pdf", metadata={"Title": "Fares from 1 April 2027"}) as pdf:
        p = Page(pdf, footer, 1)
        p.heading("Fares from 1 April 2027")
        p.para("The fares below apply to all sailings from 1 April 2027 until further notice. They were approved "
               "by the Board of Directors on 19 November 2026. All fares are in pounds sterling and include VAT "
               "where it applies.")
        p.gap()
        xs = [LEFT, 0.47, 0.72]
        p.row(["Ticket", "Port Ellery–Gullhaven", "Gullhaven–Sorrel Island"], xs, bold=True)
        for cells in [
            ["Adult single", "£6.40", "£4.10"],
            ["Adult return", "£11.50", "£7.40"],
            ["Child single (aged 5 to 15)", "£3.20", "£2.05"],
            ["Senior single (aged 65 and over)", "£4.80", "£3.10"],
            ["Car and driver, single", "£38.00", "£24.50"],
            ["Motorcycle and rider, single", "£17.00", "£11.00"],
            ["Bicycle, each way", "£4.00", "£4.00"],
            ["Ten-journey adult carnet", "£52.00", "not available"],
        ]:
            p.row(cells, xs)
        p.gap()
        p.heading("Notes", 11)
        p.para("Children under 5 travel free but must be accompanied by an adult. Passengers in a car pay the "
               "passenger fare in addition to the car and driver fare.")
        p.para("Vehicles over 2.1 metres high, including cars with roof boxes or bicycles carried on the roof, pay "
               "a high-vehicle supplement of £15.00 per crossing. Vehicles longer than 6 metres must be booked "
               "through the booking office.")
        p.para("Carnets are valid for twelve months from the date of purchase and may be used by any adult. They "
               "cannot be refunded once a journey has been taken.")
        p.close()


def minutes() -> None:
    footer = "Tamarin Bay Ferries Ltd — Board minutes, 19 November 2026"
    with PdfPages(OUT / "board-minutes-2026-11.pdf",
                  metadata={"Title": "Minutes of the Board of Directors, 19 November 2026"}) as pdf:
        p = Page(pdf, footer, 1)
        p.heading("Tamarin Bay Ferries Ltd", 13)
        p.heading("Minutes of the meeting of the Board of Directors", 11)
        p.para("Held at Harbour House, Port Ellery, on 19 November 2026 at 10:00.")
        p.para("Present: Alasdair Penhaligon (Chair), Catriona Vell (Managing Director), Owen Tregarthen (Finance "
               "Director), Miriam Okonkwo-Hale (Director of People), Dr Samuel Achterberg (non-executive "
               "director).")
        p.para("In attendance: Lionel Frost (Company Secretary); Ruth Anand (Technical Superintendent) for item 4.")
        p.para("Apologies: Hester Quayle (non-executive director).")
        p.gap(0.5)
        p.heading("1. Minutes of the previous meeting", 10.5)
        p.para("The minutes of the meeting held on 17 September 2026 were approved as a correct record.")
        p.heading("2. Fares for 2027", 10.5)
        p.para("The Finance Director proposed an average fare increase of 4.5 per cent from 1 April 2027, below "
               "the rise in fuel and wage costs over the year. The adult single fare on the main route would rise "
               "from £6.10 to £6.40. After discussion of the effect on island residents, who mostly travel on "
               "carnets, the Board approved the proposal.")
        p.heading("3. Trading in the third quarter", 10.5)
        p.para("The company carried 412,600 passengers in the third quarter, 3.1 per cent more than in the same "
               "quarter last year. Revenue for the quarter was £5.84 million. The Finance Director noted that "
               "eleven weather cancellations in September had cost an estimated £38,000 in lost revenue.")
        p.heading("4. Fleet", 10.5)
        p.para("Ruth Anand presented the third-quarter maintenance report. The dry-docking of MV Heron Point had "
               "been completed on time and under budget. The Board approved a budget of £85,000 for a "
               "feasibility study into a battery-electric vessel to replace MV Tamarin Spirit, with a report "
               "due by September 2027. The proposal for shore power at Port Ellery was deferred until the next "
               "meeting, when costings will be available.")
        p.close()

        p = Page(pdf, footer, 2)
        p.heading("5. People", 10.5)
        p.para("The Board noted the 2027 edition of the staff handbook. It approved a pay award of 3.8 per cent "
               "for all staff from 1 January 2027, as recommended by the Director of People following "
               "consultation with the crew representatives.")
        p.heading("6. Any other business", 10.5)
        p.para("Catriona Vell informed the Board that she intends to retire as Managing Director on 30 June 2027, "
               "after eleven years with the company. The Board thanked her. The Chair will lead the search for a "
               "successor, supported by Dr Samuel Achterberg.")
        p.heading("7. Date of next meeting", 10.5)
        p.para("The next meeting will be held on 18 February 2027.")
        p.gap(2)
        p.para("Signed as a correct record: Alasdair Penhaligon, Chair")
        p.para("Minutes taken by Lionel Frost, Company Secretary")
        p.close()


if __name__ == "__main__":
    fleet()
    fares()
    minutes()
