CREATE TABLE orders (id INT PRIMARY KEY, customer TEXT, amount INT);
INSERT INTO orders SELECT i, 'customer-' || (i % 13), i * 7 % 101 FROM generate_series(1, 2000) g(i);
CREATE MATERIALIZED VIEW by_customer AS SELECT customer, count(*) AS n, sum(amount) AS total FROM orders GROUP BY customer;
DELETE FROM orders WHERE id % 10 = 0;
UPDATE orders SET amount = amount + 1 WHERE id <= 20;
FLUSH;
SELECT count(*), sum(amount) FROM orders;
SELECT * FROM by_customer ORDER BY customer;
