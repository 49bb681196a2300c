"""Sealed paraphrases and near-misses of the verified questions V1-V9 (s25-*, sn25-*).

Written on 2026-12-03 by a helper session (an AI assistant, Claude), blind to the project code and to the other
question sets of this folder (see README.md, "Sealed paraphrases"). To be measured once, after the matcher changes
of 2026-12-03.

PARA_S rows: (template, question, gold_sql, difficulty, lang, order_matters, slots)
NEAR_S rows: (near_miss_of, question, gold_sql, difficulty, lang, order_matters, why)
The gold SQL of the paraphrases is built by v1()..v9() from the result shape of each template.
"""


def v1(genre):
    return ("SELECT COUNT(*) AS track_count FROM Track t JOIN Genre g ON t.GenreId = g.GenreId "
            f"WHERE g.Name = '{genre}'")


def v2(n):
    return ("SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country "
            f"ORDER BY customers DESC, Country LIMIT {n}")


def v3(start, end):
    return ("SELECT BillingCountry, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
            f"WHERE InvoiceDate >= '{start}' AND InvoiceDate < '{end}' "
            "GROUP BY BillingCountry ORDER BY revenue DESC, BillingCountry")


def v4(first, last):
    return ("SELECT c.FirstName, c.LastName FROM Customer c JOIN Employee e ON c.SupportRepId = e.EmployeeId "
            f"WHERE e.FirstName = '{first}' AND e.LastName = '{last}'")


def v5(n):
    return ("SELECT p.Name, COUNT(*) AS track_count FROM Playlist p JOIN PlaylistTrack pt ON p.PlaylistId = pt.PlaylistId "
            f"GROUP BY p.PlaylistId HAVING COUNT(*) > {n}")


def v6(year):
    return ("SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, ROUND(SUM(Total), 2) AS revenue "
            f"FROM Invoice WHERE InvoiceDate >= '{year}-01-01' AND InvoiceDate < '{year + 1}-01-01' "
            "GROUP BY month ORDER BY month")


def v7():
    return ("SELECT ROUND(AVG(i.Total), 2) AS avg_total FROM Invoice i JOIN Customer c ON i.CustomerId = c.CustomerId "
            "WHERE c.Company IS NOT NULL")


def v8():
    return ("SELECT g.Name, COUNT(t.TrackId) AS track_count FROM Genre g JOIN Track t ON t.GenreId = g.GenreId "
            "GROUP BY g.GenreId ORDER BY track_count DESC, g.Name")


def v9(country):
    return f"SELECT ROUND(SUM(Total), 2) AS total FROM Invoice WHERE BillingCountry = '{country}'"


def rng(start, end):
    return {"start_date": start, "end_date": end}


PARA_S = [
    # V1: track count of one genre
    ("V1", "Quick one: number of Blues tracks in the catalogue?", v1('Blues'), "easy", "en", False,
     {"genre": "Blues"}),
    ("V1", "レゲエの曲って全部で何曲ある？", v1('Reggae'), "easy", "ja", False, {"genre": "Reggae"}),
    ("V1", "how many songs do we hvae filed under Hip Hop/Rap?", v1('Hip Hop/Rap'), "easy", "en", False,
     {"genre": "Hip Hop/Rap"}),
    ("V1", "恐れ入りますが、ボサノバのジャンルに登録されている楽曲数を教えていただけますでしょうか。", v1('Bossa Nova'),
     "easy", "ja", False, {"genre": "Bossa Nova"}),
    ("V1", "Count the tracks whose genre is Soundtrack.", v1('Soundtrack'), "easy", "en", False,
     {"genre": "Soundtrack"}),
    ("V1", "ラテンのジャンルに入っている曲の数を知りたいです。", v1('Latin'), "easy", "ja", False, {"genre": "Latin"}),
    ("V1", "For the Opera genre, what's the track count?", v1('Opera'), "easy", "en", False, {"genre": "Opera"}),

    # V2: top N countries by number of customers (N without a tie at the cut-off: 1, 2, 4, 5, 6, 9)
    ("V2", "Top 5 countries by customer headcount, with the counts please.", v2(5), "medium", "en", True, {"n": 5}),
    ("V2", "お客さんが多い国トップ2を、人数と一緒に出して。", v2(2), "medium", "ja", True, {"n": 2}),
    ("V2", "Which country has the largest number of customers, and how many customers are there?", v2(1),
     "medium", "en", True, {"n": 1}),
    ("V2", "顧客の数が多い順に上位六か国を挙げ、国名と顧客数をあわせて教えてください。", v2(6), "medium", "ja", True,
     {"n": 6}),
    ("V2", "List the nine countries with the most customers along with how many customers each one has.", v2(9),
     "medium", "en", True, {"n": 9}),
    ("V2", "顧客数ベスト4の国と、それぞれの顧客数は？", v2(4), "medium", "ja", True, {"n": 4}),
    ("V2", "what are the two countries with the most custmers? country + count", v2(2), "medium", "en", True,
     {"n": 2}),

    # V3: revenue per billing country in a date range, highest first
    # order_matters only for ranges without a tie in revenue
    ("V3", "Revenue by billing country for February and March 2021, biggest first.",
     v3('2021-02-01', '2021-04-01'), "medium", "en", True, rng('2021-02-01', '2021-04-01')),
    ("V3", "2022年4月〜5月の請求国別の売上を、多い順に並べてください。",
     v3('2022-04-01', '2022-06-01'), "medium", "ja", True, rng('2022-04-01', '2022-06-01')),
    ("V3", "Between May and June 2023, how much revenue did each billing country bring in? Sort it descending.",
     v3('2023-05-01', '2023-07-01'), "medium", "en", True, rng('2023-05-01', '2023-07-01')),
    ("V3", "2024年の8月と9月、請求先の国ごとに売上を合計して、高いところから順に見せて。",
     v3('2024-08-01', '2024-10-01'), "medium", "ja", True, rng('2024-08-01', '2024-10-01')),
    ("V3", "Sales per billing country in March 2025, ranked from highest to lowest.",
     v3('2025-03-01', '2025-04-01'), "medium", "en", True, rng('2025-03-01', '2025-04-01')),
    ("V3", "2025年の請求国別の売上を、金額の大きい順でお願いします。",
     v3('2025-01-01', '2026-01-01'), "medium", "ja", False, rng('2025-01-01', '2026-01-01')),
    ("V3", "What did each billing country generate in revenue during Q3 2024? highest first pls",
     v3('2024-07-01', '2024-10-01'), "medium", "en", False, rng('2024-07-01', '2024-10-01')),
    ("V3", "2022年下半期の売上高を請求国ごとに、高い順で。",
     v3('2022-07-01', '2023-01-01'), "medium", "ja", False, rng('2022-07-01', '2023-01-01')),

    # V4: customers (first name, last name) of one support rep
    ("V4", "List the customers whose support rep is Margaret Park, first and last names.", v4('Margaret', 'Park'),
     "medium", "en", False, {"employee": "Margaret Park"}),
    ("V4", "スティーブ・ジョンソンさんがサポート担当をしているお客様を教えてください。", v4('Steve', 'Johnson'),
     "medium", "ja", False, {"employee": "Steve Johnson"}),
    ("V4", "who are steve johnson's customers? (he's their support rep)", v4('Steve', 'Johnson'), "medium", "en",
     False, {"employee": "Steve Johnson"}),
    ("V4", "マーガレット・パークの担当顧客の一覧ちょうだい", v4('Margaret', 'Park'), "medium", "ja", False,
     {"employee": "Margaret Park"}),
    ("V4", "Which customers are asigned to Jane Peacock as their support representative?", v4('Jane', 'Peacock'),
     "medium", "en", False, {}),
    ("V4", "Steve Johnsonがサポートを受け持っているカスタマーの名前を出して。", v4('Steve', 'Johnson'), "medium", "ja",
     False, {"employee": "Steve Johnson"}),

    # V5: playlists with more than N tracks, with the count
    ("V5", "Which playlists contain over 200 tracks?", v5(200), "medium", "en", False, {"n": 200}),
    ("V5", "50曲を超えるプレイリストを教えて。", v5(50), "medium", "ja", False, {"n": 50}),
    ("V5", "Show me the playlists with more than thirty songs in them.", v5(30), "medium", "en", False, {"n": 30}),
    ("V5", "曲数が二千曲を超えているプレイリストはどれですか？", v5(2000), "medium", "ja", False, {"n": 2000}),
    ("V5", "playlists having more than 10 tracks?", v5(10), "medium", "en", False, {"n": 10}),
    ("V5", "1400曲より多く入ってるプレイリストってある？", v5(1400), "medium", "ja", False, {"n": 1400}),

    # V6: revenue per month (1-12) of one year, in month order
    ("V6", "Monthly revenue for 2022, January through December.", v6(2022), "medium", "en", True, {"year": 2022}),
    ("V6", "2021年って月ごとにいくら売れてた？1月から12月まで順番に並べて。", v6(2021), "medium", "ja", True, {"year": 2021}),
    ("V6", "break down 2023 sales by month pls, in order", v6(2023), "medium", "en", True, {"year": 2023}),
    ("V6", "2025年について、各月の売上高を月順に一覧にしていただけますか。", v6(2025), "medium", "ja", True,
     {"year": 2025}),
    ("V6", "For each month in 2024, what was the total revenue? Keep the months in order.", v6(2024), "medium", "en",
     True, {}),
    ("V6", "2023年、ひと月ごとの売上を月の並びで見たいです。", v6(2023), "medium", "ja", True, {"year": 2023}),

    # V7: average invoice total of customers with a company (no slot)
    ("V7", "On average, how much is an invoice for customers that have a company name?", v7(), "medium", "en", False,
     {}),
    ("V7", "会社名が登録されている顧客について、請求書1件あたりの平均金額は？", v7(), "medium", "ja", False, {}),
    ("V7", "Average invoice amount for corporate clients?", v7(), "medium", "en", False, {}),
    ("V7", "企業のお客様の平均請求額を教えてください。", v7(), "medium", "ja", False, {}),
    ("V7", "what's the mean invoice total when the customer is a business (company filled in)?", v7(), "medium",
     "en", False, {}),

    # V8: track count of every genre, most first (no slot)
    ("V8", "Track count per genre, largest first.", v8(), "medium", "en", True, {}),
    ("V8", "各ジャンルに何曲あるか、多い順で一覧にして。", v8(), "medium", "ja", True, {}),
    ("V8", "For every genre, give me the number of tracks, sorted descending.", v8(), "medium", "en", True, {}),
    ("V8", "ジャンル別の局数を多い順に並べてください。", v8(), "medium", "ja", True, {}),
    ("V8", "ジャンルごとに曲が何曲あるのか、曲数の多いジャンルから順に教えていただけますか。", v8(), "medium", "ja", True,
     {}),

    # V9: total billed to one billing country
    ("V9", "アメリカへの請求額の合計は？", v9('USA'), "easy", "ja", False, {"country": "USA"}),
    ("V9", "What's the total billed to Australia?", v9('Australia'), "easy", "en", False, {"country": "Australia"}),
    ("V9", "スペインで請求された金額は合計でいくらですか？", v9('Spain'), "easy", "ja", False, {"country": "Spain"}),
    ("V9", "sum of all invoice totals for Norway", v9('Norway'), "easy", "en", False, {"country": "Norway"}),
    ("V9", "アイルランド宛ての請求、総額でいくら？", v9('Ireland'), "easy", "ja", False, {"country": "Ireland"}),
    ("V9", "How much have we billed to Chile altogether?", v9('Chile'), "easy", "en", False, {"country": "Chile"}),
    ("V9", "ハンガリーで請求された金額を合計してください。", v9('Hungary'), "easy", "ja", False, {"country": "Hungary"}),
]

NEAR_S = [
    # V1
    ("V1", "How many albums have at least one track in the Jazz genre?",
     "SELECT COUNT(DISTINCT t.AlbumId) AS albums FROM Track t JOIN Genre g ON t.GenreId = g.GenreId "
     "WHERE g.Name = 'Jazz'",
     "easy", "en", False, "counts distinct albums, not tracks"),
    ("V1", "ジャズの曲のうち、作曲者が登録されているのは何曲？",
     "SELECT COUNT(*) AS track_count FROM Track t JOIN Genre g ON t.GenreId = g.GenreId "
     "WHERE g.Name = 'Jazz' AND t.Composer IS NOT NULL",
     "medium", "ja", False, "extra filter Composer IS NOT NULL"),
    ("V1", "How many Rock tracks are longer than 6 minutes?",
     "SELECT COUNT(*) AS track_count FROM Track t JOIN Genre g ON t.GenreId = g.GenreId "
     "WHERE g.Name = 'Rock' AND t.Milliseconds > 360000",
     "medium", "en", False, "extra filter on track length"),
    ("V1", "ラテンのジャンルに曲があるアーティストは何組いますか？",
     "SELECT COUNT(DISTINCT al.ArtistId) AS artists FROM Track t JOIN Genre g ON t.GenreId = g.GenreId "
     "JOIN Album al ON t.AlbumId = al.AlbumId WHERE g.Name = 'Latin'",
     "medium", "ja", False, "counts distinct artists, not tracks"),

    # V2
    ("V2", "Which three countries have the most business customers (customers with a company)? Show country and count.",
     "SELECT Country, COUNT(*) AS customers FROM Customer WHERE Company IS NOT NULL GROUP BY Country "
     "ORDER BY customers DESC, Country LIMIT 3",
     "medium", "en", True, "extra filter Company IS NOT NULL"),
    ("V2", "請求書の件数が多い国を上位5か国、件数と一緒に出して。",
     "SELECT BillingCountry, COUNT(*) AS invoices FROM Invoice GROUP BY BillingCountry "
     "ORDER BY invoices DESC, BillingCountry LIMIT 5",
     "medium", "ja", True, "counts invoices per billing country, not customers"),
    ("V2", "Which countries have only one customer?",
     "SELECT Country FROM Customer GROUP BY Country HAVING COUNT(*) = 1",
     "medium", "en", False, "a condition on the count (exactly one), not a top-N ranking"),
    ("V2", "顧客数がいちばん多いアメリカの州はどこ？州と人数を教えて。",
     "SELECT State, COUNT(*) AS customers FROM Customer WHERE Country = 'USA' GROUP BY State "
     "ORDER BY customers DESC, State LIMIT 1",
     "medium", "ja", True, "groups by US state, not by country"),

    # V3
    ("V3", "How many invoices did each billing country have in 2022, most first?",
     "SELECT BillingCountry, COUNT(*) AS invoices FROM Invoice "
     "WHERE InvoiceDate >= '2022-01-01' AND InvoiceDate < '2023-01-01' "
     "GROUP BY BillingCountry ORDER BY invoices DESC, BillingCountry",
     "medium", "en", False, "counts invoices instead of summing revenue"),
    ("V3", "2023年の請求国ごとの平均請求額を高い順に。",
     "SELECT BillingCountry, ROUND(AVG(Total), 2) AS avg_total FROM Invoice "
     "WHERE InvoiceDate >= '2023-01-01' AND InvoiceDate < '2024-01-01' "
     "GROUP BY BillingCountry ORDER BY avg_total DESC, BillingCountry",
     "medium", "ja", False, "average invoice total instead of the revenue sum"),
    ("V3", "What was the revenue per genre in 2022, highest first?",
     "SELECT g.Name, ROUND(SUM(il.UnitPrice * il.Quantity), 2) AS revenue FROM InvoiceLine il "
     "JOIN Invoice i ON il.InvoiceId = i.InvoiceId JOIN Track t ON il.TrackId = t.TrackId "
     "JOIN Genre g ON t.GenreId = g.GenreId "
     "WHERE i.InvoiceDate >= '2022-01-01' AND i.InvoiceDate < '2023-01-01' "
     "GROUP BY g.GenreId ORDER BY revenue DESC, g.Name",
     "hard", "en", False, "groups by genre (invoice lines), not by billing country"),
    ("V3", "2024年の売上をサポート担当の社員ごとに集計して、多い順に教えて。",
     "SELECT e.FirstName, e.LastName, ROUND(SUM(i.Total), 2) AS revenue FROM Invoice i "
     "JOIN Customer c ON i.CustomerId = c.CustomerId JOIN Employee e ON c.SupportRepId = e.EmployeeId "
     "WHERE i.InvoiceDate >= '2024-01-01' AND i.InvoiceDate < '2025-01-01' "
     "GROUP BY e.EmployeeId ORDER BY revenue DESC",
     "hard", "ja", True, "groups by support rep, not by billing country"),

    # V4
    ("V4", "Which of Jane Peacock's customers are in Canada?",
     "SELECT c.FirstName, c.LastName FROM Customer c JOIN Employee e ON c.SupportRepId = e.EmployeeId "
     "WHERE e.FirstName = 'Jane' AND e.LastName = 'Peacock' AND c.Country = 'Canada'",
     "medium", "en", False, "extra filter on the customer's country"),
    ("V4", "Nancy Edwardsの部下は誰ですか？",
     "SELECT e.FirstName, e.LastName FROM Employee e JOIN Employee m ON e.ReportsTo = m.EmployeeId "
     "WHERE m.FirstName = 'Nancy' AND m.LastName = 'Edwards'",
     "medium", "ja", False, "employees reporting to a manager (ReportsTo), not customers of a support rep"),
    ("V4", "What are the email addresses of the customers Steve Johnson supports?",
     "SELECT c.Email FROM Customer c JOIN Employee e ON c.SupportRepId = e.EmployeeId "
     "WHERE e.FirstName = 'Steve' AND e.LastName = 'Johnson'",
     "medium", "en", False, "asks for the Email column, not the names"),
    ("V4", "スティーブ・ジョンソンの担当顧客のうち、累計の購入額が45ドルを超えているのは誰？",
     "SELECT c.FirstName, c.LastName FROM Customer c JOIN Employee e ON c.SupportRepId = e.EmployeeId "
     "JOIN Invoice i ON i.CustomerId = c.CustomerId WHERE e.FirstName = 'Steve' AND e.LastName = 'Johnson' "
     "GROUP BY c.CustomerId HAVING SUM(i.Total) > 45",
     "hard", "ja", False, "extra condition on each customer's total spend"),

    # V5
    ("V5", "Which playlists are empty?",
     "SELECT p.Name FROM Playlist p LEFT JOIN PlaylistTrack pt ON p.PlaylistId = pt.PlaylistId "
     "GROUP BY p.PlaylistId HAVING COUNT(pt.TrackId) = 0",
     "medium", "en", False, "playlists with no tracks, not more than N"),
    ("V5", "再生時間の合計が100時間を超えるプレイリストは？",
     "SELECT p.Name, ROUND(SUM(t.Milliseconds) / 3600000.0, 2) AS hours FROM Playlist p "
     "JOIN PlaylistTrack pt ON p.PlaylistId = pt.PlaylistId JOIN Track t ON pt.TrackId = t.TrackId "
     "GROUP BY p.PlaylistId HAVING SUM(t.Milliseconds) > 100 * 3600000",
     "hard", "ja", False, "condition on total duration, not on the track count"),
    ("V5", "Which playlists contain more than 100 Rock tracks?",
     "SELECT p.Name, COUNT(*) AS rock_tracks FROM Playlist p JOIN PlaylistTrack pt ON p.PlaylistId = pt.PlaylistId "
     "JOIN Track t ON pt.TrackId = t.TrackId JOIN Genre g ON t.GenreId = g.GenreId "
     "WHERE g.Name = 'Rock' GROUP BY p.PlaylistId HAVING COUNT(*) > 100",
     "hard", "en", False, "extra genre filter on the counted tracks"),
    ("V5", "25曲より多く収録されているアルバムは？",
     "SELECT a.Title, COUNT(*) AS track_count FROM Album a JOIN Track t ON t.AlbumId = a.AlbumId "
     "GROUP BY a.AlbumId HAVING COUNT(*) > 25",
     "medium", "ja", False, "albums, not playlists"),

    # V6
    ("V6", "How many invoices were issued in each month of 2024, in calendar order?",
     "SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, COUNT(*) AS invoices FROM Invoice "
     "WHERE InvoiceDate >= '2024-01-01' AND InvoiceDate < '2025-01-01' GROUP BY month ORDER BY month",
     "medium", "en", True, "counts invoices instead of summing revenue"),
    ("V6", "2023年の月ごとの平均請求額を月順に出して。",
     "SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, ROUND(AVG(Total), 2) AS avg_total FROM Invoice "
     "WHERE InvoiceDate >= '2023-01-01' AND InvoiceDate < '2024-01-01' GROUP BY month ORDER BY month",
     "medium", "ja", True, "average invoice total instead of the sum"),
    ("V6", "Show the 2024 revenue for each month, but only for invoices billed to Germany.",
     "SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     "WHERE InvoiceDate >= '2024-01-01' AND InvoiceDate < '2025-01-01' AND BillingCountry = 'Germany' "
     "GROUP BY month ORDER BY month",
     "medium", "en", True, "extra filter on the billing country"),
    ("V6", "全期間を通して、1月から12月までそれぞれの月の売上合計を月順に出して。",
     "SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     "GROUP BY month ORDER BY month",
     "medium", "ja", True, "month of year over all years, not one year"),

    # V7
    ("V7", "How many business customers do we have?",
     "SELECT COUNT(*) AS customers FROM Customer WHERE Company IS NOT NULL",
     "easy", "en", False, "counts customers instead of averaging invoice totals"),
    ("V7", "法人顧客の請求額の最大値はいくら？",
     "SELECT MAX(i.Total) AS max_total FROM Invoice i JOIN Customer c ON i.CustomerId = c.CustomerId "
     "WHERE c.Company IS NOT NULL",
     "medium", "ja", False, "maximum instead of average"),
    ("V7", "What's the average invoice total of business customers in Brazil?",
     "SELECT ROUND(AVG(i.Total), 2) AS avg_total FROM Invoice i JOIN Customer c ON i.CustomerId = c.CustomerId "
     "WHERE c.Company IS NOT NULL AND c.Country = 'Brazil'",
     "medium", "en", False, "extra filter on the customer's country"),
    ("V7", "法人顧客ごとに、会社名と平均請求額を出して。",
     "SELECT c.Company, ROUND(AVG(i.Total), 2) AS avg_total FROM Invoice i JOIN Customer c ON i.CustomerId = c.CustomerId "
     "WHERE c.Company IS NOT NULL GROUP BY c.CustomerId",
     "medium", "ja", False, "per-customer breakdown instead of one overall average"),

    # V8
    ("V8", "How many different albums have tracks in each genre? Most albums first.",
     "SELECT g.Name, COUNT(DISTINCT t.AlbumId) AS albums FROM Genre g JOIN Track t ON t.GenreId = g.GenreId "
     "GROUP BY g.GenreId ORDER BY albums DESC, g.Name",
     "medium", "en", True, "counts distinct albums per genre, not tracks"),
    ("V8", "ジャンルごとの曲の平均の長さ（分）を長い順に表示して。",
     "SELECT g.Name, ROUND(AVG(t.Milliseconds) / 60000.0, 2) AS avg_minutes FROM Genre g "
     "JOIN Track t ON t.GenreId = g.GenreId GROUP BY g.GenreId ORDER BY avg_minutes DESC, g.Name",
     "medium", "ja", True, "average track length instead of the track count"),
    ("V8", "Which genres have more than 100 tracks? Most tracks first.",
     "SELECT g.Name, COUNT(*) AS track_count FROM Genre g JOIN Track t ON t.GenreId = g.GenreId "
     "GROUP BY g.GenreId HAVING COUNT(*) > 100 ORDER BY track_count DESC",
     "medium", "en", True, "only genres above a threshold, not every genre"),
    ("V8", "ジャンルごとに売れた曲の数を多い順に表示して。",
     "SELECT g.Name, SUM(il.Quantity) AS sold FROM InvoiceLine il JOIN Track t ON il.TrackId = t.TrackId "
     "JOIN Genre g ON t.GenreId = g.GenreId GROUP BY g.GenreId ORDER BY sold DESC, g.Name",
     "medium", "ja", True, "units sold per genre (InvoiceLine), not tracks in the catalogue"),

    # V9
    ("V9", "カナダ向けの請求書は何件ある？",
     "SELECT COUNT(*) AS invoices FROM Invoice WHERE BillingCountry = 'Canada'",
     "easy", "ja", False, "counts invoices instead of summing totals"),
    ("V9", "What's the total billed to Toronto?",
     "SELECT ROUND(SUM(Total), 2) AS total FROM Invoice WHERE BillingCity = 'Toronto'",
     "easy", "en", False, "filters on BillingCity, not BillingCountry"),
    ("V9", "2023年にドイツで請求された金額の合計は？",
     "SELECT ROUND(SUM(Total), 2) AS total FROM Invoice WHERE BillingCountry = 'Germany' "
     "AND InvoiceDate >= '2023-01-01' AND InvoiceDate < '2024-01-01'",
     "medium", "ja", False, "extra filter on the year"),
    ("V9", "What is the largest single invoice billed to France?",
     "SELECT MAX(Total) AS max_total FROM Invoice WHERE BillingCountry = 'France'",
     "easy", "en", False, "maximum instead of sum"),
    ("V9", "How much did customers billed in Canada pay for Rock tracks in total?",
     "SELECT ROUND(SUM(il.UnitPrice * il.Quantity), 2) AS total FROM InvoiceLine il "
     "JOIN Invoice i ON il.InvoiceId = i.InvoiceId JOIN Track t ON il.TrackId = t.TrackId "
     "JOIN Genre g ON t.GenreId = g.GenreId WHERE i.BillingCountry = 'Canada' AND g.Name = 'Rock'",
     "hard", "en", False, "extra genre filter (invoice lines of Rock tracks)"),
]
