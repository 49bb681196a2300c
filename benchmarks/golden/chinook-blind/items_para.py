# Paraphrases of the 9 verified questions, and near-misses.
# Template SQL (as written blind for this set; the system's own stored SQL may differ in form):

def v1(genre):
    return ("SELECT COUNT(*) AS tracks FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
            f"WHERE g.Name = '{genre}'")

def v2(n):
    return ("SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country "
            f"ORDER BY customers DESC LIMIT {n}")

def v3(start, end):
    return ("SELECT BillingCountry, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
            f"WHERE InvoiceDate >= '{start}' AND InvoiceDate < '{end}' "
            "GROUP BY BillingCountry ORDER BY SUM(Total) DESC, BillingCountry")

def v4(first, last):
    return ("SELECT c.FirstName, c.LastName FROM Customer c JOIN Employee e ON e.EmployeeId = c.SupportRepId "
            f"WHERE e.FirstName = '{first}' AND e.LastName = '{last}'")

def v5(n):
    return ("SELECT p.Name FROM Playlist p JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId "
            f"GROUP BY p.PlaylistId, p.Name HAVING COUNT(*) > {n}")

def v6(year):
    return ("SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
            f"WHERE InvoiceDate >= '{year}-01-01' AND InvoiceDate < '{year + 1}-01-01' "
            "GROUP BY month ORDER BY month")

V7 = ("SELECT ROUND(AVG(i.Total), 2) AS avg_total FROM Invoice i JOIN Customer c ON c.CustomerId = i.CustomerId "
      "WHERE c.Company IS NOT NULL")

V8 = ("SELECT g.Name, COUNT(*) AS tracks FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
      "GROUP BY g.GenreId, g.Name ORDER BY tracks DESC, g.Name")

def v9(country):
    return f"SELECT ROUND(SUM(Total), 2) AS total FROM Invoice WHERE BillingCountry = '{country}'"

TEMPLATES = {
    "V1": ("How many tracks belong to the Jazz genre?", v1("Jazz")),
    "V2": ("Which three countries have the most customers? Show the country and the number of customers.", v2(3)),
    "V3": ("What was the revenue per billing country in 2022, highest first?", v3("2022-01-01", "2023-01-01")),
    "V4": ("Which customers does Jane Peacock look after as their support rep?", v4("Jane", "Peacock")),
    "V5": ("Which playlists hold more than 1000 tracks?", v5(1000)),
    "V6": ("Show the revenue for each month of 2024 in calendar order.", v6(2024)),
    "V7": ("What is the average invoice total of business customers?", V7),
    "V8": ("ジャンルごとの曲数を多い順に表示して。", V8),
    "V9": ("カナダで請求された金額の合計はいくら？", v9("Canada")),
}

# (template, question, gold_sql, difficulty, lang, order_matters, slots)
PARA = [
    # V1 genre
    ("V1", "How many tracks do we have in the Blues genre?", v1("Blues"), "easy", "en", False, {"genre": "Blues"}),
    ("V1", "Number of Reggae tracks in the catalogue?", v1("Reggae"), "easy", "en", False, {"genre": "Reggae"}),
    ("V1", "Count the tracks classified as Hip Hop/Rap.", v1("Hip Hop/Rap"), "easy", "en", False, {"genre": "Hip Hop/Rap"}),
    ("V1", "ロックのジャンルに入っている曲は何曲？", v1("Rock"), "easy", "ja", False, {"genre": "Rock"}),
    ("V1", "クラシックの曲数を教えて。", v1("Classical"), "easy", "ja", False, {"genre": "Classical"}),
    # V2 n
    ("V2", "Which five countries have the most customers? Country and number of customers, please.", v2(5), "medium", "en", False, {"n": 5}),
    ("V2", "Top 2 countries by customer count, with the count.", v2(2), "medium", "en", False, {"n": 2}),
    ("V2", "Show the one country with the most customers and how many customers it has.", v2(1), "medium", "en", False, {"n": 1}),
    ("V2", "顧客数が多い国トップ4を、国名と顧客数で出して。", v2(4), "medium", "ja", False, {"n": 4}),
    ("V2", "お客さんが多い国を6つ、それぞれの顧客数と一緒に教えて。", v2(6), "medium", "ja", False, {"n": 6}),
    # V3 date range
    ("V3", "What was revenue per billing country in the first half of 2023 (January-June), highest first?",
     v3("2023-01-01", "2023-07-01"), "medium", "en", True, {"period": ["2023-01-01", "2023-07-01"]}),
    ("V3", "2023年第2四半期（4〜6月）の請求国別の売上を、多い順に並べて。",
     v3("2023-04-01", "2023-07-01"), "medium", "ja", True, {"period": ["2023-04-01", "2023-07-01"]}),
    ("V3", "Revenue by billing country for 2024?",
     v3("2024-01-01", "2025-01-01"), "medium", "en", False, {"period": ["2024-01-01", "2025-01-01"]}),
    ("V3", "Break down 2025's revenue by the country the invoices were billed to.",
     v3("2025-01-01", "2026-01-01"), "medium", "en", False, {"period": ["2025-01-01", "2026-01-01"]}),
    ("V3", "2021年の請求国ごとの売上はいくら？",
     v3("2021-01-01", "2022-01-01"), "medium", "ja", False, {"period": ["2021-01-01", "2022-01-01"]}),
    # V4 employee
    ("V4", "Which customers does Margaret Park support? First and last names.", v4("Margaret", "Park"), "medium", "en", False,
     {"employee": "Margaret Park"}),
    ("V4", "List the customers assigned to Steve Johnson as their support rep.", v4("Steve", "Johnson"), "medium", "en", False,
     {"employee": "Steve Johnson"}),
    ("V4", "マーガレット・パークが担当しているお客さんを一覧にして（名と姓）。", v4("Margaret", "Park"), "medium", "ja", False,
     {"employee": "Margaret Park"}),
    ("V4", "Steve Johnsonさんがサポート担当になっている顧客は誰？", v4("Steve", "Johnson"), "medium", "ja", False,
     {"employee": "Steve Johnson"}),
    # V5 n
    ("V5", "Which playlists have more than 200 tracks?", v5(200), "medium", "en", False, {"n": 200}),
    ("V5", "Playlists with over fifty tracks?", v5(50), "medium", "en", False, {"n": 50}),
    ("V5", "曲数が20曲を超えるプレイリストはどれ？", v5(20), "medium", "ja", False, {"n": 20}),
    ("V5", "100曲より多く入っているプレイリストを教えて。", v5(100), "medium", "ja", False, {"n": 100}),
    # V6 year
    ("V6", "Monthly revenue for 2022, in calendar order.", v6(2022), "medium", "en", True, {"year": 2022}),
    ("V6", "Show the revenue for every month of 2025, January to December.", v6(2025), "medium", "en", True, {"year": 2025}),
    ("V6", "2023年の月別売上を月順に見せて。", v6(2023), "medium", "ja", True, {"year": 2023}),
    ("V6", "2021年の各月の売上を1月から順に出してください。", v6(2021), "medium", "ja", True, {"year": 2021}),
    # V7 (no slot)
    ("V7", "On average, how much is an invoice for customers that have a company on file?", V7, "medium", "en", False, {}),
    ("V7", "Mean invoice amount for corporate customers?", V7, "medium", "en", False, {}),
    ("V7", "法人顧客の請求書の平均金額は？", V7, "medium", "ja", False, {}),
    ("V7", "会社名が登録されている顧客の、請求1件あたりの平均額を教えて。", V7, "medium", "ja", False, {}),
    # V8 (no slot)
    ("V8", "How many tracks are in each genre? Biggest genres first.", V8, "medium", "en", True, {}),
    ("V8", "Track count by genre, descending.", V8, "medium", "en", True, {}),
    ("V8", "ジャンル別の曲数を多い順に並べて。", V8, "medium", "ja", True, {}),
    ("V8", "各ジャンルに何曲あるか、曲数の多い順で教えて。", V8, "medium", "ja", True, {}),
    # V9 country
    ("V9", "How much have we billed to Germany in total?", v9("Germany"), "easy", "en", False, {"country": "Germany"}),
    ("V9", "Total billed amount for the USA?", v9("USA"), "easy", "en", False, {"country": "USA"}),
    ("V9", "フランスへの請求額の合計は？", v9("France"), "easy", "ja", False, {"country": "France"}),
    ("V9", "ブラジルで請求された金額の合計はいくら？", v9("Brazil"), "easy", "ja", False, {"country": "Brazil"}),
    ("V9", "イギリスの請求総額はいくらですか？", v9("United Kingdom"), "easy", "ja", False, {"country": "United Kingdom"}),
]

def Y(y):
    return f"InvoiceDate >= '{y}-01-01' AND InvoiceDate < '{y + 1}-01-01'"

# (near_miss_of, question, gold_sql, difficulty, lang, order_matters, why)
NEAR = [
    ("V1", "How many tracks in the Jazz genre are longer than 5 minutes?",
     "SELECT COUNT(*) AS tracks FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
     "WHERE g.Name = 'Jazz' AND t.Milliseconds > 300000",
     "medium", "en", False, "extra filter on duration"),
    ("V1", "ジャズの曲を全部再生すると合計何分？（小数点以下2桁）",
     "SELECT ROUND(SUM(t.Milliseconds) / 60000.0, 2) AS minutes FROM Track t "
     "JOIN Genre g ON g.GenreId = t.GenreId WHERE g.Name = 'Jazz'",
     "medium", "ja", False, "different aggregate (SUM of minutes, not COUNT)"),
    ("V2", "Which countries have at least 4 customers? Show the country and the number of customers.",
     "SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country HAVING COUNT(*) >= 4",
     "medium", "en", False, "threshold (HAVING) instead of top-N"),
    ("V2", "売上が多い国トップ5を、請求国と売上金額で出して。",
     "SELECT BillingCountry, ROUND(SUM(Total), 2) AS revenue FROM Invoice GROUP BY BillingCountry "
     "ORDER BY SUM(Total) DESC LIMIT 5",
     "medium", "ja", False, "ranks countries by revenue, not by customer count"),
    ("V3", "What was the average invoice total per billing country in 2022?",
     "SELECT BillingCountry, ROUND(AVG(Total), 2) AS avg_total FROM Invoice "
     f"WHERE {Y(2022)} GROUP BY BillingCountry",
     "medium", "en", False, "AVG instead of SUM"),
    ("V3", "What was the revenue per billing city in 2022?",
     "SELECT BillingCity, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     f"WHERE {Y(2022)} GROUP BY BillingCity",
     "medium", "en", False, "grouped by city, not country"),
    ("V4", "How many customers does Jane Peacock look after?",
     "SELECT COUNT(*) AS customers FROM Customer c JOIN Employee e ON e.EmployeeId = c.SupportRepId "
     "WHERE e.FirstName = 'Jane' AND e.LastName = 'Peacock'",
     "medium", "en", False, "count instead of a list"),
    ("V4", "Jane Peacockが担当する顧客のうち、2024年に購入した人は誰？（名と姓）",
     "SELECT c.FirstName, c.LastName FROM Customer c JOIN Employee e ON e.EmployeeId = c.SupportRepId "
     "WHERE e.FirstName = 'Jane' AND e.LastName = 'Peacock' AND EXISTS (SELECT 1 FROM Invoice i "
     f"WHERE i.CustomerId = c.CustomerId AND i.{Y(2024)})",
     "hard", "ja", False, "extra filter: purchased in 2024"),
    ("V5", "Which playlists hold more than 1000 Rock tracks?",
     "SELECT p.Name FROM Playlist p JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId "
     "JOIN Track t ON t.TrackId = pt.TrackId JOIN Genre g ON g.GenreId = t.GenreId "
     "WHERE g.Name = 'Rock' GROUP BY p.PlaylistId, p.Name HAVING COUNT(*) > 1000",
     "hard", "en", False, "extra genre filter"),
    ("V5", "Which playlists have fewer than 30 tracks? Include empty playlists.",
     "SELECT p.Name FROM Playlist p LEFT JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId "
     "GROUP BY p.PlaylistId, p.Name HAVING COUNT(pt.TrackId) < 30",
     "medium", "en", False, "opposite comparison; needs LEFT JOIN for empty playlists"),
    ("V6", "Show the number of invoices for each month of 2024 in calendar order.",
     "SELECT strftime('%Y-%m', InvoiceDate) AS month, COUNT(*) AS invoices FROM Invoice "
     f"WHERE {Y(2024)} GROUP BY month ORDER BY month",
     "medium", "en", True, "COUNT instead of SUM"),
    ("V6", "2024年の月別売上を、カナダで請求された分だけで月順に出して。",
     "SELECT strftime('%Y-%m', InvoiceDate) AS month, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     f"WHERE {Y(2024)} AND BillingCountry = 'Canada' GROUP BY month ORDER BY month",
     "medium", "ja", True, "extra country filter"),
    ("V7", "What is the average invoice total of customers who have no company on file?",
     "SELECT ROUND(AVG(i.Total), 2) AS avg_total FROM Invoice i JOIN Customer c ON c.CustomerId = i.CustomerId "
     "WHERE c.Company IS NULL",
     "medium", "en", False, "inverted filter (private customers); the template has no slot for it"),
    ("V7", "What is the total revenue from business customers?",
     "SELECT ROUND(SUM(i.Total), 2) AS revenue FROM Invoice i JOIN Customer c ON c.CustomerId = i.CustomerId "
     "WHERE c.Company IS NOT NULL",
     "medium", "en", False, "SUM instead of AVG"),
    ("V8", "ジャンルごとの売上（明細の単価×数量、小数点以下2桁）を多い順に、上位5ジャンルだけ表示して。",
     "SELECT g.Name, ROUND(SUM(il.UnitPrice * il.Quantity), 2) AS revenue FROM InvoiceLine il "
     "JOIN Track t ON t.TrackId = il.TrackId JOIN Genre g ON g.GenreId = t.GenreId "
     "GROUP BY g.GenreId, g.Name ORDER BY SUM(il.UnitPrice * il.Quantity) DESC LIMIT 5",
     "hard", "ja", True, "revenue instead of track count, top 5 only"),
    ("V8", "Track count per genre on the 'Classical' playlist, most first.",
     "SELECT g.Name, COUNT(*) AS tracks FROM Playlist p JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId "
     "JOIN Track t ON t.TrackId = pt.TrackId JOIN Genre g ON g.GenreId = t.GenreId "
     "WHERE p.Name = 'Classical' GROUP BY g.GenreId, g.Name ORDER BY tracks DESC, g.Name",
     "hard", "en", True, "extra playlist filter"),
    ("V9", "カナダで請求された金額の平均はいくら？（請求書1件あたり）",
     "SELECT ROUND(AVG(Total), 2) AS avg_total FROM Invoice WHERE BillingCountry = 'Canada'",
     "easy", "ja", False, "AVG instead of SUM"),
    ("V9", "What was the total billed to Canada in 2023?",
     f"SELECT ROUND(SUM(Total), 2) AS total FROM Invoice WHERE BillingCountry = 'Canada' AND {Y(2023)}",
     "medium", "en", False, "extra year filter; the template has no date slot"),
]
