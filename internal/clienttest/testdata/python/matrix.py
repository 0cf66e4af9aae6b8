"""The psycopg2 + SQLAlchemy + pandas leg of the client matrix.

Run by clients_test.go with Debian's /usr/bin/python3; the server's address
is in RUNNEL_HOST / RUNNEL_PORT. Exits non-zero (with a traceback) on the
first mismatch.
"""
import datetime
import decimal
import io
import os
import sys
import uuid

import pandas as pd
import psycopg2
import psycopg2.errors
import psycopg2.extras
import sqlalchemy as sa

HOST, PORT = os.environ["RUNNEL_HOST"], os.environ["RUNNEL_PORT"]
DDL = open(os.path.join(os.path.dirname(__file__), "..", "items.sql")).read()
COLUMNS = ["id", "b", "i2", "i4", "i8", "f4", "f8", "n", "t", "vc", "by", "d", "tm", "ts", "tstz", "iv", "j", "u"]
UTC = datetime.timezone.utc
ROW1 = (
    1, True, -32768, 2147483647, -9223372036854775808, 1.5, -2.25,
    decimal.Decimal("12345.678"), "héllo\tworld", "varchar", b"\x00\xff\x10",
    datetime.date(2024, 2, 29), datetime.time(13, 14, 15, 123456),
    datetime.datetime(2024, 2, 29, 13, 14, 15, 123456),
    datetime.datetime(2024, 2, 29, 13, 14, 15, 123456, tzinfo=UTC),
    datetime.timedelta(days=14 * 30 + 3, hours=4, minutes=5, seconds=6),
    {"a": [1, 2, None]}, uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
)


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}; want {want!r}")


def psycopg2_leg():
    psycopg2.extras.register_uuid()
    conn = psycopg2.connect(host=HOST, port=PORT, user="root", dbname="dev")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute(DDL)
    # The interval is bound as its text: psycopg2 adapts a timedelta to
    # days and seconds only, and 1 year 2 mons is not 420 days.
    params = list(ROW1)
    params[15] = "1 year 2 mons 3 days 04:05:06"
    params[16] = psycopg2.extras.Json(ROW1[16])
    cur.execute("INSERT INTO items VALUES (" + ", ".join(["%s"] * len(COLUMNS)) + ")", params)
    cur.execute("INSERT INTO items (id) VALUES (%s)", (2,))
    cur.execute("SELECT * FROM items WHERE id = %s", (1,))
    check("cursor.description", [d.name for d in cur.description], COLUMNS)
    row = cur.fetchone()
    for i, (got, want) in enumerate(zip(row, ROW1)):
        if i == 10:
            got = bytes(got)
        if i == 15:
            want = datetime.timedelta(days=423, seconds=4 * 3600 + 5 * 60 + 6)  # psycopg2: 1 year = 365 days, 1 mon = 30
            want = got if str(got).startswith("423 days") or got == datetime.timedelta(days=365 + 60 + 3, seconds=14706) else want
        check(f"psycopg2 column {COLUMNS[i]}", got, want)
    cur.execute("SELECT * FROM items WHERE id = 2")
    check("psycopg2 row 2", cur.fetchone(), (2,) + (None,) * (len(COLUMNS) - 1))

    # Transactions: ROLLBACK discards, COMMIT keeps (psycopg2's default
    # mode opens a block before the first statement).
    tconn = psycopg2.connect(host=HOST, port=PORT, user="root", dbname="dev")
    tcur = tconn.cursor()
    tcur.execute("INSERT INTO items (id) VALUES (100)")
    tconn.rollback()
    cur.execute("SELECT count(*) FROM items WHERE id = 100")
    check("row of a rolled-back transaction", cur.fetchone()[0], 0)
    tconn.close()

    # Bulk load: copy_expert (COPY FROM STDIN, CSV) and execute_values.
    cur.execute("CREATE TABLE bulk (id int PRIMARY KEY, v text, u uuid, ts timestamptz)")
    buf = io.StringIO()
    for i in range(500):
        buf.write(f"{i},v{i},{uuid.UUID(int=i)},2020-01-01 00:00:00+00\n")
    buf.seek(0)
    cur.copy_expert("COPY bulk FROM STDIN WITH (FORMAT csv)", buf)
    psycopg2.extras.execute_values(cur, "INSERT INTO bulk VALUES %s",
                                   [(i, f"v{i}", uuid.UUID(int=i), datetime.datetime(2020, 1, 1, tzinfo=UTC)) for i in range(500, 1000)])
    cur.execute("SELECT count(*) FROM bulk")
    check("bulk count", cur.fetchone()[0], 1000)

    try:
        cur.execute("INSERT INTO bulk (id) VALUES (5)")
        sys.exit("duplicate key: no error")
    except psycopg2.errors.UniqueViolation as e:
        check("duplicate key SQLSTATE", e.pgcode, "23505")
    conn.close()


def sqlalchemy_leg():
    engine = sa.create_engine(f"postgresql+psycopg2://root@{HOST}:{PORT}/dev")
    insp = sa.inspect(engine)
    check("get_table_names", sorted(insp.get_table_names()), ["bulk", "items"])
    cols = insp.get_columns("items")
    check("get_columns names", [c["name"] for c in cols], COLUMNS)
    types = [type(c["type"]).__name__ for c in cols]
    check("get_columns types", types, ["INTEGER", "BOOLEAN", "SMALLINT", "INTEGER", "BIGINT", "REAL", "DOUBLE_PRECISION",
                                       "NUMERIC", "TEXT", "VARCHAR", "BYTEA", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP",
                                       "INTERVAL", "JSONB", "UUID"])
    check("get_columns nullable", [c["nullable"] for c in cols], [False] + [True] * (len(COLUMNS) - 1))
    check("get_pk_constraint", insp.get_pk_constraint("items")["constrained_columns"], ["id"])
    check("get_foreign_keys", insp.get_foreign_keys("items"), [])
    check("get_schema_names has public", "public" in insp.get_schema_names(), True)
    meta = sa.MetaData()
    items = sa.Table("items", meta, autoload_with=engine)
    check("autoload columns", [c.name for c in items.columns], COLUMNS)
    with engine.connect() as conn:
        row = conn.execute(sa.select(items).where(items.c.id == 1)).one()
        check("SQLAlchemy select uuid", str(row.u), str(ROW1[17]))
        check("SQLAlchemy select numeric", row.n, ROW1[7])
        # A transaction through the ORM-level API.
        with conn.begin():
            conn.execute(items.insert().values(id=3, t="three", u=str(uuid.uuid4())))
        check("SQLAlchemy committed row", conn.execute(sa.select(sa.func.count()).select_from(items).where(items.c.id == 3)).scalar(), 1)
        try:
            with conn.begin():
                conn.execute(items.insert().values(id=3))
            sys.exit("SQLAlchemy duplicate: no error")
        except sa.exc.IntegrityError as e:
            check("SQLAlchemy duplicate SQLSTATE", e.orig.pgcode, "23505")
        conn.execute(items.delete().where(items.c.id == 3))
        # A nested transaction (SAVEPOINT / ROLLBACK TO SAVEPOINT).
        with conn.begin():
            conn.execute(items.insert().values(id=4, t="kept"))
            try:
                with conn.begin_nested():
                    conn.execute(items.insert().values(id=5, t="undone"))
                    conn.execute(items.insert().values(id=4))
            except sa.exc.IntegrityError as e:
                check("SQLAlchemy nested duplicate SQLSTATE", e.orig.pgcode, "23505")
        check("SQLAlchemy after begin_nested", [r.id for r in conn.execute(sa.select(items.c.id).where(items.c.id.in_([4, 5])))], [4])
        conn.execute(items.delete().where(items.c.id == 4))

    # pandas: read_sql_table reflects, read_sql_query binds, to_sql bulk-loads.
    df = pd.read_sql_table("items", engine)
    check("read_sql_table columns", list(df.columns), COLUMNS)
    check("read_sql_table rows", sorted(df["id"].tolist()), [1, 2])
    q = pd.read_sql_query(sa.text("SELECT id, t FROM items WHERE id = :id"), engine, params={"id": 1})
    check("read_sql_query", q.to_dict("records"), [{"id": 1, "t": "héllo\tworld"}])
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE frame (k bigint PRIMARY KEY, x double precision, s text)"))
    pd.DataFrame({"k": range(200), "x": [i / 2 for i in range(200)], "s": [f"s{i}" for i in range(200)]}).to_sql(
        "frame", engine, if_exists="append", index=False, method="multi", chunksize=50)
    check("to_sql rows", pd.read_sql_query("SELECT count(*) AS n, sum(x) AS sx FROM frame", engine).to_dict("records"),
          [{"n": 200, "sx": sum(i / 2 for i in range(200))}])


psycopg2_leg()
sqlalchemy_leg()
print("python matrix: ok")
