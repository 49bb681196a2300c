"""Held-out paraphrases (h25-*) and near-misses (hn25-*) of the verified questions V1-V9.

Written blind on 2026-12-03 (see README.md, section "Held-out paraphrases").
The gold SQL of a paraphrase is the template's result shape with the new slot value, built by the
functions v1()..v9() below. The result shapes come from the brief, not from the system's stored SQL.

PARA_H rows: (template, question, gold_sql, difficulty, lang, order_matters, slots)
NEAR_H rows: (near_miss_of, question, gold_sql, difficulty, lang, order_matters, why)
"""


def v1(genre):
    return ("SELECT COUNT(*) AS track_count FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
            f"WHERE g.Name = '{genre}'")


def v2(n):
    return ("SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country "
            f"ORDER BY customers DESC, Country ASC LIMIT {n}")


def v3(start, end):
    return ("SELECT BillingCountry, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
            f"WHERE InvoiceDate >= '{start}' AND InvoiceDate < '{end}' "
            "GROUP BY BillingCountry ORDER BY revenue DESC, BillingCountry ASC")


def v4(first, last):
    return ("SELECT c.FirstName, c.LastName FROM Customer c JOIN Employee e ON e.EmployeeId = c.SupportRepId "
            f"WHERE e.FirstName = '{first}' AND e.LastName = '{last}' ORDER BY c.LastName, c.FirstName")


def v5(n):
    return ("SELECT p.Name, COUNT(*) AS track_count FROM Playlist p JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId "
            f"GROUP BY p.PlaylistId HAVING COUNT(*) > {n} ORDER BY track_count DESC, p.Name")


def v6(year):
    return ("SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, ROUND(SUM(Total), 2) AS revenue "
            f"FROM Invoice WHERE InvoiceDate >= '{year}-01-01' AND InvoiceDate < '{year + 1}-01-01' "
            "GROUP BY month ORDER BY month")


V7 = ("SELECT ROUND(AVG(i.Total), 2) AS avg_invoice_total FROM Invoice i "
      "JOIN Customer c ON c.CustomerId = i.CustomerId WHERE c.Company IS NOT NULL")

V8 = ("SELECT g.Name, COUNT(*) AS track_count FROM Genre g JOIN Track t ON t.GenreId = g.GenreId "
      "GROUP BY g.GenreId ORDER BY track_count DESC, g.Name ASC")


def v9(country):
    return f"SELECT ROUND(SUM(Total), 2) AS total_billed FROM Invoice WHERE BillingCountry = '{country}'"


def g(v):  # genre slot
    return {"genre": v}


def n(v):  # number slot (top N for V2, threshold for V5)
    return {"n": v}


def dr(a, b):  # half-open date range slot
    return {"start_date": a, "end_date": b}


def emp(first, last):  # employee slot
    return {"employee": f"{first} {last}"}


def yr(v):
    return {"year": v}


def ct(v):
    return {"country": v}


PARA_H = [
    # V1: track count of one genre
    ("V1", "How many Blues tracks do we have in the catalogue?", v1("Blues"), "easy", "en", False, g("Blues")),
    ("V1", "nmber of tracks tagged Reggae?", v1("Reggae"), "easy", "en", False, g("Reggae")),
    ("V1", "ロックの曲って全部で何曲ある？", v1("Rock"), "easy", "ja", False, g("Rock")),
    ("V1", "クラシックのジャンルに属する曲数を教えていただけますか。", v1("Classical"), "easy", "ja", False, g("Classical")),
    ("V1", "Quick one: how many songs are in the Bossa Nova genre?", v1("Bossa Nova"), "easy", "en", False, g("Bossa Nova")),
    ("V1", "ジャンルが「Hip Hop/Rap」の曲は何曲？", v1("Hip Hop/Rap"), "easy", "ja", False, g("Hip Hop/Rap")),
    ("V1", "Track count for Latin, please.", v1("Latin"), "easy", "en", False, g("Latin")),
    # V2: top N countries by customers (N = 3, 7, 8, 10 have a tie at the cut-off)
    ("V2", "Top 5 countries by number of customers, with the customer count for each.", v2(5), "medium", "en", True, n(5)),
    ("V2", "顧客が多い国トップ4を、国名と顧客数つきで。", v2(4), "medium", "ja", True, n(4)),
    ("V2", "Which six countries have the largest customer base? Give the country and how many customers it has.",
     v2(6), "medium", "en", True, n(6)),
    ("V2", "お客様の人数が多い国を上位五つ、人数と一緒に教えてください。", v2(5), "medium", "ja", True, n(5)),
    ("V2", "can u list the 9 countries w/ the most customers + their customer counts", v2(9), "medium", "en", True, n(9)),
    ("V2", "顧客数で見て上位2か国はどこ？国名と顧客数を出して。", v2(2), "medium", "ja", True, n(2)),
    ("V2", "Which country has the most customers, and how many customers are there?", v2(1), "medium", "en", True, n(1)),
    # V3: revenue per billing country in a date range, highest first
    ("V3", "2023年上半期の国別売上（請求国ベース）を多い順に。", v3("2023-01-01", "2023-07-01"), "medium", "ja", True,
     dr("2023-01-01", "2023-07-01")),
    ("V3", "Revenue by billing country for Q2 2023, biggest first.", v3("2023-04-01", "2023-07-01"), "medium", "en", True,
     dr("2023-04-01", "2023-07-01")),
    ("V3", "Could you break down sales by billing country for February and March 2022, sorted from highest to lowest?",
     v3("2022-02-01", "2022-04-01"), "medium", "en", True, dr("2022-02-01", "2022-04-01")),
    ("V3", "2025年8月〜9月の請求国別の売上を、金額の大きい順に並べてください。", v3("2025-08-01", "2025-10-01"), "medium", "ja",
     True, dr("2025-08-01", "2025-10-01")),
    ("V3", "Sales per billing country from January through February 2023, highest revenue first.",
     v3("2023-01-01", "2023-03-01"), "medium", "en", True, dr("2023-01-01", "2023-03-01")),
    ("V3", "billing-country revenue for 2021, top to bottom", v3("2021-01-01", "2022-01-01"), "medium", "en", False,
     dr("2021-01-01", "2022-01-01")),
    ("V3", "2024年の売上を請求先の国ごとに、高いほうから表示して。", v3("2024-01-01", "2025-01-01"), "medium", "ja", False,
     dr("2024-01-01", "2025-01-01")),
    # V4: customers of one support rep
    ("V4", "スティーブ・ジョンソンさんが担当しているお客様の一覧を出してください。", v4("Steve", "Johnson"), "medium", "ja", False,
     emp("Steve", "Johnson")),
    ("V4", "list the customers whose support rep is Margaret Park", v4("Margaret", "Park"), "medium", "en", False,
     emp("Margaret", "Park")),
    ("V4", "マーガレット・パーク担当の顧客は？", v4("Margaret", "Park"), "medium", "ja", False, emp("Margaret", "Park")),
    ("V4", "Who are Steve Johnson's accounts? First and last names pls.", v4("Steve", "Johnson"), "medium", "en", False,
     emp("Steve", "Johnson")),
    ("V4", "サポート担当がジェーン・ピーコックになっている顧客の氏名を教えて。", v4("Jane", "Peacock"), "medium", "ja", False,
     emp("Jane", "Peacock")),
    ("V4", "Which customers is Margaret Park the support representative for?", v4("Margaret", "Park"), "medium", "en",
     False, emp("Margaret", "Park")),
    # V5: playlists with more than N tracks (name, track count)
    ("V5", "Which playlists have more than 200 tracks? Show the track count too.", v5(200), "medium", "en", False, n(200)),
    ("V5", "曲数が50曲を超えるプレイリストを曲数つきで教えて。", v5(50), "medium", "ja", False, n(50)),
    ("V5", "playlists with over five hundred songs + how many songs each", v5(500), "medium", "en", False, n(500)),
    ("V5", "収録曲が百曲より多いプレイリストはどれですか？曲数も添えてください。", v5(100), "medium", "ja", False, n(100)),
    ("V5", "Show me every playlist containing more than thirty tracks, and the number of tracks in it.", v5(30), "medium",
     "en", False, n(30)),
    ("V5", "トラック数20超えのプレイリスト一覧（曲数も）", v5(20), "medium", "ja", False, n(20)),
    # V6: monthly revenue of one year
    ("V6", "Monthly revenue for 2023, January to December.", v6(2023), "medium", "en", True, yr(2023)),
    ("V6", "2021年の売上を月別に、1月から順に出して。", v6(2021), "medium", "ja", True, yr(2021)),
    ("V6", "revnue by month in 2025 pls, in month order", v6(2025), "medium", "en", True, yr(2025)),
    ("V6", "2022年の各月の売上高を月順に見せていただけますか。", v6(2022), "medium", "ja", True, yr(2022)),
    ("V6", "For 2024, what did we take in each month? Month number and revenue, Jan first.", v6(2024), "medium", "en",
     True, yr(2024)),
    ("V6", "2025年の月次売上を1月〜12月の順で。", v6(2025), "medium", "ja", True, yr(2025)),
    # V7: average invoice total of business customers (no slot)
    ("V7", "What's the mean invoice amount for customers that belong to a company?", V7, "medium", "en", False, {}),
    ("V7", "会社に所属している顧客の請求金額の平均は？", V7, "medium", "ja", False, {}),
    ("V7", "avg invoice total, corporate customers only", V7, "medium", "en", False, {}),
    ("V7", "法人のお客様の1請求あたりの平均金額を教えてください。", V7, "medium", "ja", False, {}),
    ("V7", "On average, how much is an invoice for our B2B customers (the ones with a company name)?", V7, "medium",
     "en", False, {}),
    # V8: track count per genre, most first (no slot)
    ("V8", "Track count per genre, largest genres first.", V8, "medium", "en", True, {}),
    ("V8", "各ジャンルの曲数を、曲数の多い順に一覧にして。", V8, "medium", "ja", True, {}),
    ("V8", "Which genres have the most songs? Give every genre with its number of tracks, biggest first.", V8, "medium",
     "en", True, {}),
    ("V8", "ジャンル別トラック数ランキング（全ジャンル）", V8, "medium", "ja", True, {}),
    ("V8", "Break down our catalog by genre: how many tracks in each, sorted descending.", V8, "medium", "en", True, {}),
    # V9: total billed to one country
    ("V9", "ドイツへの請求額の合計を教えて。", v9("Germany"), "easy", "ja", False, ct("Germany")),
    ("V9", "Total invoiced to the USA?", v9("USA"), "easy", "en", False, ct("USA")),
    ("V9", "英国向けの請求の総額はいくらですか？", v9("United Kingdom"), "easy", "ja", False, ct("United Kingdom")),
    ("V9", "How much have we billed to Brazil altogether?", v9("Brazil"), "easy", "en", False, ct("Brazil")),
    ("V9", "インドで請求された金額って合計でいくら？", v9("India"), "easy", "ja", False, ct("India")),
    ("V9", "sum of invoice totals w/ billing country Portugal", v9("Portugal"), "easy", "en", False, ct("Portugal")),
    ("V9", "チェコ宛ての請求合計額", v9("Czech Republic"), "easy", "ja", False, ct("Czech Republic")),
]

NEAR_H = [
    # V1
    ("V1", "How many minutes of Jazz do we have in total? Sum the track lengths and round to 1 decimal.",
     "SELECT ROUND(SUM(t.Milliseconds) / 60000.0, 1) AS jazz_minutes FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
     "WHERE g.Name = 'Jazz'", "easy", "en", False,
     "sum of durations, not a count of tracks"),
    ("V1", "ロックの曲のうち、作曲者が登録されていない曲は何曲？",
     "SELECT COUNT(*) AS track_count FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
     "WHERE g.Name = 'Rock' AND t.Composer IS NULL", "easy", "ja", False,
     "extra filter Composer IS NULL that V1 has no slot for"),
    ("V1", "How many different Jazz tracks have actually been sold at least once?",
     "SELECT COUNT(DISTINCT il.TrackId) AS sold_tracks FROM InvoiceLine il JOIN Track t ON t.TrackId = il.TrackId "
     "JOIN Genre g ON g.GenreId = t.GenreId WHERE g.Name = 'Jazz'", "medium", "en", False,
     "counts sold tracks (InvoiceLine), not catalogue tracks"),
    # V2
    ("V2", "Which cities have more than one customer? Show the city and its number of customers.",
     "SELECT City, COUNT(*) AS customers FROM Customer GROUP BY City HAVING COUNT(*) > 1 ORDER BY City",
     "medium", "en", False,
     "groups by City, not Country, and filters on the count instead of a top N"),
    ("V2", "売上が多い国トップ4を、請求国と売上金額で出して。",
     "SELECT BillingCountry, ROUND(SUM(Total), 2) AS revenue FROM Invoice GROUP BY BillingCountry "
     "ORDER BY revenue DESC LIMIT 4", "medium", "ja", True,
     "ranks countries by revenue, not by number of customers"),
    ("V2", "How many countries have more than two customers?",
     "SELECT COUNT(*) AS countries FROM (SELECT Country FROM Customer GROUP BY Country HAVING COUNT(*) > 2)",
     "medium", "en", False,
     "one count of countries, not a top-N list"),
    # V3
    ("V3", "What was the revenue per billing city in the first half of 2023? City and revenue, any order.",
     "SELECT BillingCity, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     "WHERE InvoiceDate >= '2023-01-01' AND InvoiceDate < '2023-07-01' GROUP BY BillingCity", "medium", "en", False,
     "groups by billing city, not billing country"),
    ("V3", "2022年の請求国ごとの請求書の件数を教えて（国と件数）。",
     "SELECT BillingCountry, COUNT(*) AS invoices FROM Invoice "
     "WHERE InvoiceDate >= '2022-01-01' AND InvoiceDate < '2023-01-01' GROUP BY BillingCountry", "medium", "ja", False,
     "number of invoices, not revenue"),
    ("V3", "Who were our top 5 customers by spending in 2024? First name, last name and total spent, any order.",
     "SELECT c.FirstName, c.LastName, ROUND(SUM(i.Total), 2) AS spent FROM Invoice i "
     "JOIN Customer c ON c.CustomerId = i.CustomerId "
     "WHERE i.InvoiceDate >= '2024-01-01' AND i.InvoiceDate < '2025-01-01' GROUP BY c.CustomerId "
     "ORDER BY spent DESC, c.LastName, c.FirstName LIMIT 5", "medium", "en", False,
     "per-customer breakdown with a top 5, not per billing country"),
    # V4
    ("V4", "How many customers does Jane Peacock look after?",
     "SELECT COUNT(*) AS customers FROM Customer c JOIN Employee e ON e.EmployeeId = c.SupportRepId "
     "WHERE e.FirstName = 'Jane' AND e.LastName = 'Peacock'", "easy", "en", False,
     "a count, not the list of customers"),
    ("V4", "マーガレット・パークの上司は誰？氏名で。",
     "SELECT m.FirstName, m.LastName FROM Employee e JOIN Employee m ON m.EmployeeId = e.ReportsTo "
     "WHERE e.FirstName = 'Margaret' AND e.LastName = 'Park'", "medium", "ja", False,
     "asks for the employee's manager (ReportsTo), not her customers"),
    ("V4", "Which of Steve Johnson's customers live in the USA? First and last name.",
     "SELECT c.FirstName, c.LastName FROM Customer c JOIN Employee e ON e.EmployeeId = c.SupportRepId "
     "WHERE e.FirstName = 'Steve' AND e.LastName = 'Johnson' AND c.Country = 'USA'", "medium", "en", False,
     "extra country filter that V4 has no slot for"),
    # V5
    ("V5", "Which playlists have fewer than 20 tracks? Include empty playlists, and show the track count.",
     "SELECT p.Name, COUNT(pt.TrackId) AS track_count FROM Playlist p "
     "LEFT JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId GROUP BY p.PlaylistId "
     "HAVING COUNT(pt.TrackId) < 20", "medium", "en", False,
     "opposite comparison (fewer than), and empty playlists are included"),
    ("V5", "ロックの曲を100曲より多く含むプレイリストは？プレイリスト名とロックの曲数で。",
     "SELECT p.Name, COUNT(*) AS rock_tracks FROM Playlist p JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId "
     "JOIN Track t ON t.TrackId = pt.TrackId JOIN Genre g ON g.GenreId = t.GenreId WHERE g.Name = 'Rock' "
     "GROUP BY p.PlaylistId HAVING COUNT(*) > 100", "medium", "ja", False,
     "counts only Rock tracks, a genre filter V5 has no slot for"),
    ("V5", "Which playlists run for more than 100 hours in total? Name and total hours rounded to 1 decimal.",
     "SELECT p.Name, ROUND(SUM(t.Milliseconds) / 3600000.0, 1) AS hours FROM Playlist p "
     "JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId JOIN Track t ON t.TrackId = pt.TrackId "
     "GROUP BY p.PlaylistId HAVING SUM(t.Milliseconds) > 100 * 3600000", "medium", "en", False,
     "total duration, not number of tracks"),
    # V6
    ("V6", "Show the revenue for each quarter of 2024 in order (quarter number 1-4 and revenue).",
     "SELECT (CAST(strftime('%m', InvoiceDate) AS INTEGER) + 2) / 3 AS quarter, ROUND(SUM(Total), 2) AS revenue "
     "FROM Invoice WHERE InvoiceDate >= '2024-01-01' AND InvoiceDate < '2025-01-01' GROUP BY quarter ORDER BY quarter",
     "medium", "en", True,
     "per quarter, not per month"),
    ("V6", "2023年の月ごとの請求書の件数を月順に（月番号と件数）。",
     "SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, COUNT(*) AS invoices FROM Invoice "
     "WHERE InvoiceDate >= '2023-01-01' AND InvoiceDate < '2024-01-01' GROUP BY month ORDER BY month",
     "medium", "ja", True,
     "number of invoices, not revenue"),
    ("V6", "Monthly revenue for 2022 from invoices billed to Canada only, in calendar order (month number and revenue).",
     "SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     "WHERE InvoiceDate >= '2022-01-01' AND InvoiceDate < '2023-01-01' AND BillingCountry = 'Canada' "
     "GROUP BY month ORDER BY month", "medium", "en", True,
     "extra country filter that V6 has no slot for; months without Canadian invoices are absent"),
    # V7
    ("V7", "個人顧客（会社名が登録されていない顧客）の請求額の平均はいくら？",
     "SELECT ROUND(AVG(i.Total), 2) AS avg_invoice_total FROM Invoice i JOIN Customer c ON c.CustomerId = i.CustomerId "
     "WHERE c.Company IS NULL", "medium", "ja", False,
     "opposite condition Company IS NULL"),
    ("V7", "What's the total revenue from business customers?",
     "SELECT ROUND(SUM(i.Total), 2) AS revenue FROM Invoice i JOIN Customer c ON c.CustomerId = i.CustomerId "
     "WHERE c.Company IS NOT NULL", "medium", "en", False,
     "SUM instead of AVG"),
    ("V7", "What is the average invoice total of business customers in 2024?",
     "SELECT ROUND(AVG(i.Total), 2) AS avg_invoice_total FROM Invoice i JOIN Customer c ON c.CustomerId = i.CustomerId "
     "WHERE c.Company IS NOT NULL AND i.InvoiceDate >= '2024-01-01' AND i.InvoiceDate < '2025-01-01'",
     "medium", "en", False,
     "year filter; V7 has no slot"),
    # V8
    ("V8", "How many tracks are there for each media type? Most first.",
     "SELECT m.Name, COUNT(*) AS track_count FROM MediaType m JOIN Track t ON t.MediaTypeId = m.MediaTypeId "
     "GROUP BY m.MediaTypeId ORDER BY track_count DESC", "medium", "en", True,
     "groups by media type, not genre"),
    ("V8", "ジャンルごとの販売数量（売れた曲の数量の合計）を多い順に。売れたことのないジャンルは除いて、同数はジャンル名順で。",
     "SELECT g.Name, SUM(il.Quantity) AS units_sold FROM InvoiceLine il JOIN Track t ON t.TrackId = il.TrackId "
     "JOIN Genre g ON g.GenreId = t.GenreId GROUP BY g.GenreId ORDER BY units_sold DESC, g.Name ASC",
     "medium", "ja", True,
     "units sold (InvoiceLine.Quantity), not tracks in the catalogue"),
    ("V8", "曲数が20曲未満のジャンルはどれ？曲数も。",
     "SELECT g.Name, COUNT(*) AS track_count FROM Genre g JOIN Track t ON t.GenreId = g.GenreId "
     "GROUP BY g.GenreId HAVING COUNT(*) < 20", "medium", "ja", False,
     "filter on the count (fewer than 20) instead of every genre"),
    # V9
    ("V9", "How many invoices were billed to Canada?",
     "SELECT COUNT(*) AS invoices FROM Invoice WHERE BillingCountry = 'Canada'", "easy", "en", False,
     "count of invoices, not the amount"),
    ("V9", "カナダの請求1件あたりの平均金額は？",
     "SELECT ROUND(AVG(Total), 2) AS avg_total FROM Invoice WHERE BillingCountry = 'Canada'", "easy", "ja", False,
     "average, not sum"),
    ("V9", "What is the total amount billed to Toronto?",
     "SELECT ROUND(SUM(Total), 2) AS total_billed FROM Invoice WHERE BillingCity = 'Toronto'", "easy", "en", False,
     "filters on BillingCity, not BillingCountry"),
]
