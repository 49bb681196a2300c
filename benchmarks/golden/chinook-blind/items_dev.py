# Blind evaluation questions for the Chinook text-to-SQL bench (relayrag).
# Each tuple: (question, gold_sql, difficulty, lang, order_matters)
# ids are assigned in order: b25-01, b25-02, ...

def Y(y):
    return f"InvoiceDate >= '{y}-01-01' AND InvoiceDate < '{y + 1}-01-01'"

DEV = [
    # ------------------------------------------------------------------ easy
    ("How many customers are based in Germany?",
     "SELECT COUNT(*) AS customers FROM Customer WHERE Country = 'Germany'",
     "easy", "en", False),
    ("List the names of all the media types we carry.",
     "SELECT Name FROM MediaType",
     "easy", "en", False),
    ("How many invoices did we issue in 2023?",
     f"SELECT COUNT(*) AS invoices FROM Invoice WHERE {Y(2023)}",
     "easy", "en", False),
    ("州（State）が登録されていない顧客は何人いますか？",
     "SELECT COUNT(*) AS customers FROM Customer WHERE State IS NULL",
     "easy", "ja", False),
    ("Who sits at the top of the org chart, i.e. the employee who doesn't report to anyone? First and last name please.",
     "SELECT FirstName, LastName FROM Employee WHERE ReportsTo IS NULL",
     "easy", "en", False),
    ("What is our longest track? Give the track name and its length in minutes, rounded to 2 decimals.",
     "SELECT Name, ROUND(Milliseconds / 60000.0, 2) AS minutes FROM Track "
     "ORDER BY Milliseconds DESC LIMIT 1",
     "easy", "en", False),
    ("単価が1.99ドルの曲は何曲ありますか？",
     "SELECT COUNT(*) AS tracks FROM Track WHERE UnitPrice = 1.99",
     "easy", "ja", False),
    ("請求書1件あたりの平均金額はいくら？小数点以下2桁でお願いします。",
     "SELECT ROUND(AVG(Total), 2) AS avg_total FROM Invoice",
     "easy", "ja", False),
    ("Which cities in Canada do we have customers in? Alphabetical order, please.",
     "SELECT DISTINCT City FROM Customer WHERE Country = 'Canada' ORDER BY City",
     "easy", "en", True),
    ("Which employees were hired during 2003? Show their first and last names.",
     "SELECT FirstName, LastName FROM Employee "
     "WHERE HireDate >= '2003-01-01' AND HireDate < '2004-01-01'",
     "easy", "en", False),
    ("What's the biggest single invoice total we've ever billed?",
     "SELECT ROUND(MAX(Total), 2) AS max_total FROM Invoice",
     "easy", "en", False),
    ("曲名に「love」を含む曲（大文字・小文字は区別しない）は何曲ありますか？",
     "SELECT COUNT(*) AS tracks FROM Track WHERE LOWER(Name) LIKE '%love%'",
     "easy", "ja", False),
    ("How many artists have a name that starts with \"The \" (the word The followed by a space)?",
     "SELECT COUNT(*) AS artists FROM Artist WHERE Name LIKE 'The %'",
     "easy", "en", False),
    ("Show the first name, last name and company of every customer who has a company on file.",
     "SELECT FirstName, LastName, Company FROM Customer WHERE Company IS NOT NULL",
     "easy", "en", False),
    ("How many tracks run longer than 10 minutes?",
     "SELECT COUNT(*) AS tracks FROM Track WHERE Milliseconds > 600000",
     "easy", "en", False),
    ("Which artists have the word \"Orchestra\" in their name? Just the artist names.",
     "SELECT Name FROM Artist WHERE Name LIKE '%Orchestra%'",
     "easy", "en", False),

    # ---------------------------------------------------------------- medium
    ("Show each customer from Brazil with the number of invoices they have: first name, last name and invoice count.",
     "SELECT c.FirstName, c.LastName, COUNT(i.InvoiceId) AS invoices FROM Customer c "
     "LEFT JOIN Invoice i ON i.CustomerId = c.CustomerId WHERE c.Country = 'Brazil' "
     "GROUP BY c.CustomerId, c.FirstName, c.LastName",
     "medium", "en", False),
    ("Which genres have more than 100 tracks? Show the genre name and how many tracks it has.",
     "SELECT g.Name, COUNT(*) AS tracks FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
     "GROUP BY g.GenreId, g.Name HAVING COUNT(*) > 100",
     "medium", "en", False),
    ("Give me quarterly revenue for 2023: the quarter number (1-4) and the revenue, in quarter order.",
     "SELECT (CAST(strftime('%m', InvoiceDate) AS INTEGER) + 2) / 3 AS quarter, "
     "ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     f"WHERE {Y(2023)} GROUP BY quarter ORDER BY quarter",
     "medium", "en", True),
    ("2022年の月別の請求書件数を月順に出して。月は「2022-01」のような形式で。",
     "SELECT strftime('%Y-%m', InvoiceDate) AS month, COUNT(*) AS invoices FROM Invoice "
     f"WHERE {Y(2022)} GROUP BY month ORDER BY month",
     "medium", "ja", True),
    ("年ごとの売上合計を古い年から順に教えて。",
     "SELECT strftime('%Y', InvoiceDate) AS year, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     "GROUP BY year ORDER BY year",
     "medium", "ja", True),
    ("Top 5 artists by number of albums: artist name and album count.",
     "SELECT ar.Name, COUNT(*) AS albums FROM Album al JOIN Artist ar ON ar.ArtistId = al.ArtistId "
     "GROUP BY ar.ArtistId, ar.Name ORDER BY albums DESC LIMIT 5",
     "medium", "en", False),
    ("What is the average track length in minutes for each media type? Media type name and the average, rounded to 2 decimals.",
     "SELECT m.Name, ROUND(AVG(t.Milliseconds) / 60000.0, 2) AS avg_minutes FROM Track t "
     "JOIN MediaType m ON m.MediaTypeId = t.MediaTypeId GROUP BY m.MediaTypeId, m.Name",
     "medium", "en", False),
    ("How many customers does each support rep look after? Show the rep's first and last name and the number of customers.",
     "SELECT e.FirstName, e.LastName, COUNT(*) AS customers FROM Customer c "
     "JOIN Employee e ON e.EmployeeId = c.SupportRepId GROUP BY e.EmployeeId, e.FirstName, e.LastName",
     "medium", "en", False),
    ("Revenue by media type: the sum of unit price times quantity over all invoice lines, per media type name (2 decimals).",
     "SELECT m.Name, ROUND(SUM(il.UnitPrice * il.Quantity), 2) AS revenue FROM InvoiceLine il "
     "JOIN Track t ON t.TrackId = il.TrackId JOIN MediaType m ON m.MediaTypeId = t.MediaTypeId "
     "GROUP BY m.MediaTypeId, m.Name",
     "medium", "en", False),
    ("平均曲長が5分を超えるジャンルはどれ？ジャンル名と平均の長さ（分・小数点以下2桁）を出して。",
     "SELECT g.Name, ROUND(AVG(t.Milliseconds) / 60000.0, 2) AS avg_minutes FROM Track t "
     "JOIN Genre g ON g.GenreId = t.GenreId GROUP BY g.GenreId, g.Name "
     "HAVING AVG(t.Milliseconds) > 300000",
     "medium", "ja", False),
    ("List Led Zeppelin's albums with the number of tracks on each: album title and track count.",
     "SELECT al.Title, COUNT(t.TrackId) AS tracks FROM Album al "
     "JOIN Artist ar ON ar.ArtistId = al.ArtistId LEFT JOIN Track t ON t.AlbumId = al.AlbumId "
     "WHERE ar.Name = 'Led Zeppelin' GROUP BY al.AlbumId, al.Title",
     "medium", "en", False),
    ("What are the names of the tracks on the 'Grunge' playlist?",
     "SELECT t.Name FROM Playlist p JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId "
     "JOIN Track t ON t.TrackId = pt.TrackId WHERE p.Name = 'Grunge'",
     "medium", "en", False),
    ("For every billing country with more than 20 invoices, show the number of invoices and the average invoice total (2 decimals).",
     "SELECT BillingCountry, COUNT(*) AS invoices, ROUND(AVG(Total), 2) AS avg_total FROM Invoice "
     "GROUP BY BillingCountry HAVING COUNT(*) > 20",
     "medium", "en", False),
    ("Which composers are credited on more than 20 tracks? Show the composer and the number of tracks.",
     "SELECT Composer, COUNT(*) AS tracks FROM Track WHERE Composer IS NOT NULL "
     "GROUP BY Composer HAVING COUNT(*) > 20",
     "medium", "en", False),
    ("メディアタイプごとの曲数を教えてください。",
     "SELECT m.Name, COUNT(*) AS tracks FROM Track t JOIN MediaType m ON m.MediaTypeId = t.MediaTypeId "
     "GROUP BY m.MediaTypeId, m.Name",
     "medium", "ja", False),
    ("How many invoices did Leonie Köhler receive per year? Year and count, by year.",
     "SELECT strftime('%Y', i.InvoiceDate) AS year, COUNT(*) AS invoices FROM Invoice i "
     "JOIN Customer c ON c.CustomerId = i.CustomerId "
     "WHERE c.FirstName = 'Leonie' AND c.LastName = 'Köhler' GROUP BY year ORDER BY year",
     "medium", "en", True),
    ("Total 2022 sales per sales support agent: the agent's first and last name and the sum of invoice totals of the customers they support (2 decimals).",
     "SELECT e.FirstName, e.LastName, ROUND(SUM(i.Total), 2) AS revenue FROM Invoice i "
     "JOIN Customer c ON c.CustomerId = i.CustomerId JOIN Employee e ON e.EmployeeId = c.SupportRepId "
     f"WHERE i.{Y(2022)} GROUP BY e.EmployeeId, e.FirstName, e.LastName",
     "medium", "en", False),
    ("What percentage of our tracks are videos (media type 'Protected MPEG-4 video file')? Round to 2 decimals.",
     "SELECT ROUND(100.0 * SUM(CASE WHEN m.Name = 'Protected MPEG-4 video file' THEN 1 ELSE 0 END) / COUNT(*), 2) "
     "AS pct FROM Track t JOIN MediaType m ON m.MediaTypeId = t.MediaTypeId",
     "medium", "en", False),
    ("What was total revenue in the first half of 2023 (January through June)?",
     "SELECT ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     "WHERE InvoiceDate >= '2023-01-01' AND InvoiceDate < '2023-07-01'",
     "medium", "en", False),
    ("How much revenue did we book in the last quarter of 2024 (October to December)?",
     "SELECT ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     "WHERE InvoiceDate >= '2024-10-01' AND InvoiceDate < '2025-01-01'",
     "medium", "en", False),
    ("2025年の第4四半期（10〜12月）に購入した顧客は何人？",
     "SELECT COUNT(DISTINCT CustomerId) AS customers FROM Invoice "
     "WHERE InvoiceDate >= '2025-10-01' AND InvoiceDate < '2026-01-01'",
     "medium", "ja", False),
    ("List every employee next to their manager, both as full names ('First Last'). The general manager has no manager and should still be listed, with an empty manager.",
     "SELECT e.FirstName || ' ' || e.LastName AS employee, m.FirstName || ' ' || m.LastName AS manager "
     "FROM Employee e LEFT JOIN Employee m ON m.EmployeeId = e.ReportsTo",
     "medium", "en", False),
    ("Which employees have direct reports, and how many does each have? Full name ('First Last') and the number of direct reports.",
     "SELECT m.FirstName || ' ' || m.LastName AS manager, COUNT(*) AS direct_reports FROM Employee e "
     "JOIN Employee m ON m.EmployeeId = e.ReportsTo GROUP BY m.EmployeeId, m.FirstName, m.LastName",
     "medium", "en", False),
    ("Compare 2022 with 2023: total revenue in each of the two years.",
     "SELECT strftime('%Y', InvoiceDate) AS year, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
     "WHERE InvoiceDate >= '2022-01-01' AND InvoiceDate < '2024-01-01' GROUP BY year",
     "medium", "en", False),
    ("プレイリストごとの曲数を教えて。曲が1曲も入っていないプレイリストも0曲として含めてください（同名のプレイリストは別々に数える）。",
     "SELECT p.Name, COUNT(pt.TrackId) AS tracks FROM Playlist p "
     "LEFT JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId GROUP BY p.PlaylistId, p.Name",
     "medium", "ja", False),
    ("What was the average invoice total in each year? Year and average (2 decimals), oldest year first.",
     "SELECT strftime('%Y', InvoiceDate) AS year, ROUND(AVG(Total), 2) AS avg_total FROM Invoice "
     "GROUP BY year ORDER BY year",
     "medium", "en", True),
    ("In which genres are there tracks priced at 1.99, and how many such tracks does each genre have?",
     "SELECT g.Name, COUNT(*) AS tracks FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
     "WHERE t.UnitPrice = 1.99 GROUP BY g.GenreId, g.Name",
     "medium", "en", False),

    # ------------------------------------------------------------------ hard
    ("Running total of revenue by month for 2023: the month (YYYY-MM), that month's revenue and the cumulative revenue for the year so far, in month order.",
     "SELECT month, ROUND(revenue, 2) AS revenue, "
     "ROUND(SUM(revenue) OVER (ORDER BY month), 2) AS running_total FROM ("
     "SELECT strftime('%Y-%m', InvoiceDate) AS month, SUM(Total) AS revenue FROM Invoice "
     f"WHERE {Y(2023)} GROUP BY month) ORDER BY month",
     "hard", "en", True),
    ("Which customers have never bought a single Metal track? First and last name.",
     "SELECT c.FirstName, c.LastName FROM Customer c WHERE NOT EXISTS ("
     "SELECT 1 FROM Invoice i JOIN InvoiceLine il ON il.InvoiceId = i.InvoiceId "
     "JOIN Track t ON t.TrackId = il.TrackId JOIN Genre g ON g.GenreId = t.GenreId "
     "WHERE i.CustomerId = c.CustomerId AND g.Name = 'Metal')",
     "hard", "en", False),
    ("Year-over-year revenue growth: for each year from 2022 to 2025 show the revenue and the percentage change against the previous year (2 decimals), chronologically.",
     "SELECT year, ROUND(revenue, 2) AS revenue, "
     "ROUND(100.0 * (revenue - prev) / prev, 2) AS pct_change FROM ("
     "SELECT year, revenue, LAG(revenue) OVER (ORDER BY year) AS prev FROM ("
     "SELECT strftime('%Y', InvoiceDate) AS year, SUM(Total) AS revenue FROM Invoice GROUP BY year)) "
     "WHERE year >= '2022' ORDER BY year",
     "hard", "en", True),
    ("Who reports to Andrew Adams, directly or through someone else? List first and last names of everyone below him in the hierarchy.",
     "WITH RECURSIVE sub(EmployeeId) AS ("
     "SELECT EmployeeId FROM Employee WHERE ReportsTo = (SELECT EmployeeId FROM Employee "
     "WHERE FirstName = 'Andrew' AND LastName = 'Adams') "
     "UNION SELECT e.EmployeeId FROM Employee e JOIN sub s ON e.ReportsTo = s.EmployeeId) "
     "SELECT e.FirstName, e.LastName FROM Employee e JOIN sub s ON s.EmployeeId = e.EmployeeId",
     "hard", "en", False),
    ("2024年の売上に占めるジャンル別シェア（%、小数点以下2桁）の上位5ジャンルを、シェアの大きい順に出して。売上は明細の単価×数量で計算。",
     "SELECT g.Name, ROUND(100.0 * SUM(il.UnitPrice * il.Quantity) / (SELECT SUM(il2.UnitPrice * il2.Quantity) "
     "FROM InvoiceLine il2 JOIN Invoice i2 ON i2.InvoiceId = il2.InvoiceId "
     "WHERE i2.InvoiceDate >= '2024-01-01' AND i2.InvoiceDate < '2025-01-01'), 2) AS share_pct "
     "FROM InvoiceLine il JOIN Invoice i ON i.InvoiceId = il.InvoiceId "
     "JOIN Track t ON t.TrackId = il.TrackId JOIN Genre g ON g.GenreId = t.GenreId "
     f"WHERE i.{Y(2024)} GROUP BY g.GenreId, g.Name "
     "ORDER BY SUM(il.UnitPrice * il.Quantity) DESC LIMIT 5",
     "hard", "ja", True),
    ("How many customers have spent more in total than the average customer's lifetime spend?",
     "SELECT COUNT(*) AS customers FROM (SELECT CustomerId, SUM(Total) AS spent FROM Invoice "
     "GROUP BY CustomerId) s WHERE spent > (SELECT AVG(spent) FROM ("
     "SELECT SUM(Total) AS spent FROM Invoice GROUP BY CustomerId))",
     "hard", "en", False),
    ("Which artists have tracks on the 'Heavy Metal Classic' playlist, and how many tracks does each have there?",
     "SELECT ar.Name, COUNT(*) AS tracks FROM Playlist p "
     "JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId JOIN Track t ON t.TrackId = pt.TrackId "
     "JOIN Album al ON al.AlbumId = t.AlbumId JOIN Artist ar ON ar.ArtistId = al.ArtistId "
     "WHERE p.Name = 'Heavy Metal Classic' GROUP BY ar.ArtistId, ar.Name",
     "hard", "en", False),
    ("2024年に一度も購入しなかった顧客の名前（名と姓）を出してください。",
     "SELECT c.FirstName, c.LastName FROM Customer c WHERE NOT EXISTS ("
     "SELECT 1 FROM Invoice i WHERE i.CustomerId = c.CustomerId "
     "AND i.InvoiceDate >= '2024-01-01' AND i.InvoiceDate < '2025-01-01')",
     "hard", "ja", False),
    ("Monthly revenue for 2022 and 2023 side by side: month number (1-12), 2022 revenue, 2023 revenue, in month order.",
     "SELECT CAST(strftime('%m', InvoiceDate) AS INTEGER) AS month, "
     "ROUND(SUM(CASE WHEN strftime('%Y', InvoiceDate) = '2022' THEN Total ELSE 0 END), 2) AS revenue_2022, "
     "ROUND(SUM(CASE WHEN strftime('%Y', InvoiceDate) = '2023' THEN Total ELSE 0 END), 2) AS revenue_2023 "
     "FROM Invoice WHERE InvoiceDate >= '2022-01-01' AND InvoiceDate < '2024-01-01' "
     "GROUP BY month ORDER BY month",
     "hard", "en", True),
    ("For each billing country, which genre sold the most tracks (number of invoice lines)? Show country, genre and number of tracks sold; include ties.",
     "SELECT BillingCountry, genre, sold FROM ("
     "SELECT i.BillingCountry, g.Name AS genre, COUNT(*) AS sold, "
     "RANK() OVER (PARTITION BY i.BillingCountry ORDER BY COUNT(*) DESC) AS rnk "
     "FROM Invoice i JOIN InvoiceLine il ON il.InvoiceId = i.InvoiceId "
     "JOIN Track t ON t.TrackId = il.TrackId JOIN Genre g ON g.GenreId = t.GenreId "
     "GROUP BY i.BillingCountry, g.GenreId, g.Name) WHERE rnk = 1",
     "hard", "en", False),
    ("What was the average number of tracks per invoice in each year? Year and average (2 decimals), chronological.",
     "SELECT strftime('%Y', i.InvoiceDate) AS year, "
     "ROUND(1.0 * COUNT(il.InvoiceLineId) / COUNT(DISTINCT i.InvoiceId), 2) AS avg_tracks "
     "FROM Invoice i JOIN InvoiceLine il ON il.InvoiceId = i.InvoiceId GROUP BY year ORDER BY year",
     "hard", "en", True),
    ("Which customers have bought tracks from at least 10 different genres? First name, last name and the number of distinct genres.",
     "SELECT c.FirstName, c.LastName, COUNT(DISTINCT t.GenreId) AS genres FROM Customer c "
     "JOIN Invoice i ON i.CustomerId = c.CustomerId JOIN InvoiceLine il ON il.InvoiceId = i.InvoiceId "
     "JOIN Track t ON t.TrackId = il.TrackId GROUP BY c.CustomerId, c.FirstName, c.LastName "
     "HAVING COUNT(DISTINCT t.GenreId) >= 10",
     "hard", "en", False),
    ("2024年の四半期ごとの売上と、前の四半期からの増減額を出して（2024年第1四半期は2023年第4四半期と比較）。四半期は1〜4の番号で、順番に。",
     "SELECT quarter, ROUND(revenue, 2) AS revenue, ROUND(revenue - prev, 2) AS change FROM ("
     "SELECT year, quarter, revenue, LAG(revenue) OVER (ORDER BY year, quarter) AS prev FROM ("
     "SELECT strftime('%Y', InvoiceDate) AS year, "
     "(CAST(strftime('%m', InvoiceDate) AS INTEGER) + 2) / 3 AS quarter, SUM(Total) AS revenue "
     "FROM Invoice WHERE InvoiceDate >= '2023-10-01' AND InvoiceDate < '2025-01-01' "
     "GROUP BY year, quarter)) WHERE year = '2024' ORDER BY quarter",
     "hard", "ja", True),
    ("For each support rep, what percentage of their customers are business customers (have a company on file)? Rep's full name ('First Last') and the percentage (2 decimals).",
     "SELECT e.FirstName || ' ' || e.LastName AS rep, "
     "ROUND(100.0 * SUM(CASE WHEN c.Company IS NOT NULL THEN 1 ELSE 0 END) / COUNT(*), 2) AS pct_business "
     "FROM Customer c JOIN Employee e ON e.EmployeeId = c.SupportRepId "
     "GROUP BY e.EmployeeId, e.FirstName, e.LastName",
     "hard", "en", False),
    ("Which albums have every one of their tracks longer than 6 minutes? Album title and artist name.",
     "SELECT al.Title, ar.Name FROM Album al JOIN Artist ar ON ar.ArtistId = al.ArtistId "
     "JOIN Track t ON t.AlbumId = al.AlbumId GROUP BY al.AlbumId, al.Title, ar.Name "
     "HAVING MIN(t.Milliseconds) > 360000",
     "hard", "en", False),
    ("For each sales support agent, which year brought the most revenue from the customers they support? Agent first name, last name, the year and that year's revenue (2 decimals).",
     "SELECT FirstName, LastName, year, ROUND(revenue, 2) AS revenue FROM ("
     "SELECT e.EmployeeId, e.FirstName, e.LastName, strftime('%Y', i.InvoiceDate) AS year, "
     "SUM(i.Total) AS revenue, RANK() OVER (PARTITION BY e.EmployeeId ORDER BY SUM(i.Total) DESC) AS rnk "
     "FROM Invoice i JOIN Customer c ON c.CustomerId = i.CustomerId "
     "JOIN Employee e ON e.EmployeeId = c.SupportRepId "
     "GROUP BY e.EmployeeId, e.FirstName, e.LastName, year) WHERE rnk = 1",
     "hard", "en", False),
    ("How many tracks have never been sold, broken down by media type name?",
     "SELECT m.Name, COUNT(*) AS unsold FROM Track t JOIN MediaType m ON m.MediaTypeId = t.MediaTypeId "
     "WHERE NOT EXISTS (SELECT 1 FROM InvoiceLine il WHERE il.TrackId = t.TrackId) "
     "GROUP BY m.MediaTypeId, m.Name",
     "hard", "en", False),
    ("ジャンルごとに一番長い曲の曲名と長さ（分、小数点以下2桁）を、ジャンル名と一緒に出して。同じ長さの曲があれば全部含めて。",
     "SELECT genre, Name, ROUND(Milliseconds / 60000.0, 2) AS minutes FROM ("
     "SELECT g.Name AS genre, t.Name, t.Milliseconds, "
     "RANK() OVER (PARTITION BY g.GenreId ORDER BY t.Milliseconds DESC) AS rnk "
     "FROM Track t JOIN Genre g ON g.GenreId = t.GenreId) WHERE rnk = 1",
     "hard", "ja", False),
    ("For each year, what share of revenue came from invoices billed to the USA? Year and percentage (2 decimals), chronological.",
     "SELECT strftime('%Y', InvoiceDate) AS year, "
     "ROUND(100.0 * SUM(CASE WHEN BillingCountry = 'USA' THEN Total ELSE 0 END) / SUM(Total), 2) AS usa_pct "
     "FROM Invoice GROUP BY year ORDER BY year",
     "hard", "en", True),
    ("Weekly revenue for January 2024: label each week by the date of its Monday (YYYY-MM-DD; weeks run Monday to Sunday), count only invoices dated in January 2024, and list the weeks in order.",
     "SELECT date(InvoiceDate, 'weekday 0', '-6 days') AS week_start, ROUND(SUM(Total), 2) AS revenue "
     "FROM Invoice WHERE InvoiceDate >= '2024-01-01' AND InvoiceDate < '2024-02-01' "
     "GROUP BY week_start ORDER BY week_start",
     "hard", "en", True),
    ("Top 3 artists by revenue in 2025 (sum of unit price x quantity on invoice lines): artist name and revenue, highest first.",
     "SELECT ar.Name, ROUND(SUM(il.UnitPrice * il.Quantity), 2) AS revenue FROM InvoiceLine il "
     "JOIN Invoice i ON i.InvoiceId = il.InvoiceId JOIN Track t ON t.TrackId = il.TrackId "
     "JOIN Album al ON al.AlbumId = t.AlbumId JOIN Artist ar ON ar.ArtistId = al.ArtistId "
     f"WHERE i.{Y(2025)} GROUP BY ar.ArtistId, ar.Name ORDER BY SUM(il.UnitPrice * il.Quantity) DESC LIMIT 3",
     "hard", "en", True),
    ("On average, how many days pass between one invoice and the same customer's next invoice? One number over all customers, rounded to 1 decimal.",
     "SELECT ROUND(AVG(gap), 1) AS avg_days FROM ("
     "SELECT julianday(InvoiceDate) - julianday(LAG(InvoiceDate) OVER "
     "(PARTITION BY CustomerId ORDER BY InvoiceDate, InvoiceId)) AS gap FROM Invoice) WHERE gap IS NOT NULL",
     "hard", "en", False),
    ("Which customers spent more in 2023 than in 2022? First name, last name, 2022 spend and 2023 spend (2 decimals).",
     "SELECT c.FirstName, c.LastName, ROUND(s.y2022, 2) AS spend_2022, ROUND(s.y2023, 2) AS spend_2023 FROM ("
     "SELECT CustomerId, "
     "SUM(CASE WHEN InvoiceDate >= '2022-01-01' AND InvoiceDate < '2023-01-01' THEN Total ELSE 0 END) AS y2022, "
     "SUM(CASE WHEN InvoiceDate >= '2023-01-01' AND InvoiceDate < '2024-01-01' THEN Total ELSE 0 END) AS y2023 "
     "FROM Invoice GROUP BY CustomerId) s JOIN Customer c ON c.CustomerId = s.CustomerId "
     "WHERE s.y2023 > s.y2022",
     "hard", "en", False),
    ("国ごとに購入金額の合計が一番多い顧客を、国・名・姓・金額（小数点以下2桁）で出して。同額の顧客がいれば全員含めて。",
     "SELECT Country, FirstName, LastName, ROUND(spent, 2) AS spent FROM ("
     "SELECT c.Country, c.FirstName, c.LastName, SUM(i.Total) AS spent, "
     "RANK() OVER (PARTITION BY c.Country ORDER BY ROUND(SUM(i.Total), 2) DESC) AS rnk "
     "FROM Customer c JOIN Invoice i ON i.CustomerId = c.CustomerId "
     "GROUP BY c.CustomerId, c.Country, c.FirstName, c.LastName) WHERE rnk = 1",
     "hard", "ja", False),
    ("In each country that has at least 3 customers, who are the top 2 customers by total spend? Include ties. Country, first name, last name and total spend (2 decimals).",
     "SELECT Country, FirstName, LastName, ROUND(spent, 2) AS spent FROM ("
     "SELECT c.Country, c.FirstName, c.LastName, SUM(i.Total) AS spent, "
     "RANK() OVER (PARTITION BY c.Country ORDER BY ROUND(SUM(i.Total), 2) DESC) AS rnk "
     "FROM Customer c JOIN Invoice i ON i.CustomerId = c.CustomerId "
     "WHERE c.Country IN (SELECT Country FROM Customer GROUP BY Country HAVING COUNT(*) >= 3) "
     "GROUP BY c.CustomerId, c.Country, c.FirstName, c.LastName) WHERE rnk <= 2",
     "hard", "en", False),
    ("Which playlists contain at least one Iron Maiden track, and how many Iron Maiden tracks does each hold? Playlists that share a name count separately.",
     "SELECT p.Name, COUNT(*) AS tracks FROM Playlist p "
     "JOIN PlaylistTrack pt ON pt.PlaylistId = p.PlaylistId JOIN Track t ON t.TrackId = pt.TrackId "
     "JOIN Album al ON al.AlbumId = t.AlbumId JOIN Artist ar ON ar.ArtistId = al.ArtistId "
     "WHERE ar.Name = 'Iron Maiden' GROUP BY p.PlaylistId, p.Name",
     "hard", "en", False),
    ("アルバムを5枚以上出しているアーティストについて、アルバム数と曲数の合計を出して。",
     "SELECT ar.Name, COUNT(DISTINCT al.AlbumId) AS albums, COUNT(t.TrackId) AS tracks FROM Artist ar "
     "JOIN Album al ON al.ArtistId = ar.ArtistId LEFT JOIN Track t ON t.AlbumId = al.AlbumId "
     "GROUP BY ar.ArtistId, ar.Name HAVING COUNT(DISTINCT al.AlbumId) >= 5",
     "hard", "ja", False),
]
