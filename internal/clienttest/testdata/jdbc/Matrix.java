// The pgjdbc leg of the client matrix: compiled with javac and run by
// clients_test.go against a Runnel server at RUNNEL_HOST:RUNNEL_PORT.
// Exits non-zero with a message on the first mismatch.

import java.io.StringReader;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.*;
import java.time.*;
import java.util.*;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;
import org.postgresql.util.PGInterval;
import org.postgresql.util.PGobject;

public class Matrix {
    static final String[] COLUMNS = {"id", "b", "i2", "i4", "i8", "f4", "f8", "n", "t", "vc", "by", "d", "tm", "ts", "tstz", "iv", "j", "u"};

    static void check(String what, Object got, Object want) {
        if (!Objects.equals(got, want)) {
            throw new AssertionError(what + ": got " + got + "; want " + want);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://" + System.getenv("RUNNEL_HOST") + ":" + System.getenv("RUNNEL_PORT") + "/dev";
        Properties props = new Properties();
        props.setProperty("user", "root");
        props.setProperty("options", "-c implicit_flush=true -c TimeZone=UTC");
        try (Connection conn = DriverManager.getConnection(url, props)) {
            String ddl = Files.readString(Path.of("..", "items.sql"));
            try (Statement st = conn.createStatement()) {
                st.execute(ddl);
            }
            dml(conn);
            metadata(conn);
            transactions(conn);
            bulk(conn);
        }
        System.out.println("jdbc matrix: ok");
    }

    static final UUID U = UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    static final LocalDateTime TS = LocalDateTime.of(2024, 2, 29, 13, 14, 15, 123456000);

    static void dml(Connection conn) throws Exception {
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
            ps.setInt(1, 1);
            ps.setBoolean(2, true);
            ps.setShort(3, Short.MIN_VALUE);
            ps.setInt(4, Integer.MAX_VALUE);
            ps.setLong(5, Long.MIN_VALUE);
            ps.setFloat(6, 1.5f);
            ps.setDouble(7, -2.25);
            ps.setBigDecimal(8, new BigDecimal("12345.678"));
            ps.setString(9, "héllo\tworld");
            ps.setString(10, "varchar");
            ps.setBytes(11, new byte[] {0, (byte) 0xff, 0x10});
            ps.setObject(12, LocalDate.of(2024, 2, 29));
            ps.setObject(13, LocalTime.of(13, 14, 15, 123456000));
            ps.setObject(14, TS);
            ps.setObject(15, OffsetDateTime.of(TS, ZoneOffset.UTC));
            ps.setObject(16, new PGInterval(1, 2, 3, 4, 5, 6));
            PGobject j = new PGobject();
            j.setType("jsonb");
            j.setValue("{\"a\": [1, 2, null]}");
            ps.setObject(17, j);
            ps.setObject(18, U);
            ps.executeUpdate();
            ps.setInt(1, 2);
            for (int i = 2; i <= COLUMNS.length; i++) {
                ps.setNull(i, Types.NULL);
            }
            ps.executeUpdate();
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT * FROM items WHERE id = ?")) {
            ps.setInt(1, 1);
            try (ResultSet rs = ps.executeQuery()) {
                check("row 1 present", rs.next(), true);
                check("b", rs.getBoolean("b"), true);
                check("i2", rs.getShort("i2"), Short.MIN_VALUE);
                check("i4", rs.getInt("i4"), Integer.MAX_VALUE);
                check("i8", rs.getLong("i8"), Long.MIN_VALUE);
                check("f4", rs.getFloat("f4"), 1.5f);
                check("f8", rs.getDouble("f8"), -2.25);
                check("n", rs.getBigDecimal("n"), new BigDecimal("12345.678"));
                check("t", rs.getString("t"), "héllo\tworld");
                check("vc", rs.getString("vc"), "varchar");
                check("by", Arrays.toString(rs.getBytes("by")), Arrays.toString(new byte[] {0, (byte) 0xff, 0x10}));
                check("d", rs.getObject("d", LocalDate.class), LocalDate.of(2024, 2, 29));
                check("tm", rs.getObject("tm", LocalTime.class), LocalTime.of(13, 14, 15, 123456000));
                check("ts", rs.getObject("ts", LocalDateTime.class), TS);
                check("tstz", rs.getObject("tstz", OffsetDateTime.class).toInstant(), TS.toInstant(ZoneOffset.UTC));
                check("iv", rs.getObject("iv"), new PGInterval(1, 2, 3, 4, 5, 6));
                check("j", rs.getString("j"), "{\"a\": [1, 2, null]}");
                check("u", rs.getObject("u"), U);
                check("u class", rs.getObject("u").getClass(), UUID.class);
                // ResultSetMetaData: table and nullability come from the
                // RowDescription's table OID and column number.
                ResultSetMetaData md = rs.getMetaData();
                check("column count", md.getColumnCount(), COLUMNS.length);
                for (int i = 1; i <= COLUMNS.length; i++) {
                    check("getColumnName " + i, md.getColumnName(i), COLUMNS[i - 1]);
                    check("getTableName " + i, md.getTableName(i), "items");
                    check("isNullable " + i, md.isNullable(i), i == 1 ? ResultSetMetaData.columnNoNulls : ResultSetMetaData.columnNullable);
                }
                check("getColumnTypeName u", md.getColumnTypeName(18), "uuid");
                check("getColumnTypeName iv", md.getColumnTypeName(16), "interval");
                check("getColumnTypeName j", md.getColumnTypeName(17), "jsonb");
            }
            ps.setInt(1, 2);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                for (int i = 2; i <= COLUMNS.length; i++) {
                    check("row 2 column " + COLUMNS[i - 1], rs.getObject(i), null);
                }
            }
        }
    }

    static List<String> strings(ResultSet rs, String col) throws SQLException {
        List<String> out = new ArrayList<>();
        try (rs) {
            while (rs.next()) {
                out.add(rs.getString(col));
            }
        }
        return out;
    }

    static void metadata(Connection conn) throws Exception {
        DatabaseMetaData md = conn.getMetaData();
        check("getTables", strings(md.getTables(null, "public", "%", new String[] {"TABLE"}), "TABLE_NAME"), List.of("items"));
        check("getColumns", strings(md.getColumns(null, "public", "items", "%"), "COLUMN_NAME"), Arrays.asList(COLUMNS));
        check("getColumns types", strings(md.getColumns(null, "public", "items", "%"), "TYPE_NAME"),
                List.of("int4", "bool", "int2", "int4", "int8", "float4", "float8", "numeric", "text", "varchar", "bytea", "date",
                        "time", "timestamp", "timestamptz", "interval", "jsonb", "uuid"));
        check("getPrimaryKeys", strings(md.getPrimaryKeys(null, "public", "items"), "COLUMN_NAME"), List.of("id"));
        check("getIndexInfo", strings(md.getIndexInfo(null, "public", "items", false, false), "INDEX_NAME"), List.of("items_pkey"));
        check("getImportedKeys", strings(md.getImportedKeys(null, "public", "items"), "FKCOLUMN_NAME"), List.of());
        List<String> types = strings(md.getTypeInfo(), "TYPE_NAME");
        for (String t : List.of("int4", "uuid", "jsonb", "interval", "timestamptz")) {
            check("getTypeInfo has " + t, types.contains(t), true);
        }
        check("getSchemas has public", strings(md.getSchemas(), "TABLE_SCHEM").contains("public"), true);
        check("getDatabaseProductName", md.getDatabaseProductName(), "PostgreSQL");
    }

    static void transactions(Connection conn) throws Exception {
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            st.executeUpdate("INSERT INTO items (id, t) VALUES (100, 'rolled back')");
            conn.rollback();
            st.executeUpdate("INSERT INTO items (id, t) VALUES (101, 'committed')");
            Savepoint sp = conn.setSavepoint("sp1");
            st.executeUpdate("INSERT INTO items (id, t) VALUES (102, 'rolled back to sp1')");
            conn.rollback(sp);
            conn.commit();
        }
        conn.setAutoCommit(true);
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT id FROM items WHERE id >= 100 ORDER BY id")) {
            check("after rollback and commit", strings(rs, "id"), List.of("101"));
        }
        try (Statement st = conn.createStatement()) {
            st.executeUpdate("DELETE FROM items WHERE id = 101");
        }
    }

    static void bulk(Connection conn) throws Exception {
        try (Statement st = conn.createStatement()) {
            st.execute("CREATE TABLE bulk (id int PRIMARY KEY, v text, u uuid, ts timestamptz)");
        }
        // CopyManager: COPY FROM STDIN in text format.
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 500; i++) {
            sb.append(i).append("\tv").append(i).append('\t').append(new UUID(0, i)).append("\t2020-01-01 00:00:00+00\n");
        }
        CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
        check("copyIn rows", cm.copyIn("COPY bulk FROM STDIN", new StringReader(sb.toString())), 500L);
        // A JDBC batch of bound inserts.
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO bulk VALUES (?, ?, ?, ?)")) {
            for (int i = 500; i < 1000; i++) {
                ps.setInt(1, i);
                ps.setString(2, "v" + i);
                ps.setObject(3, new UUID(0, i));
                ps.setObject(4, OffsetDateTime.of(2020, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC));
                ps.addBatch();
            }
            check("executeBatch", ps.executeBatch().length, 500);
        }
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO bulk (id) VALUES (?)")) {
            ps.setInt(1, 5);
            ps.executeUpdate();
            throw new AssertionError("duplicate key: no error");
        } catch (SQLException e) {
            check("duplicate key SQLSTATE", e.getSQLState(), "23505");
        }
    }
}
