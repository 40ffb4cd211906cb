import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

/**
 * Runs Kafka Connect's own transforms (connect-transforms) on schemaless source records, for
 * test/integration/connect-transforms.int.test.ts. Reads a JSON array of cases on stdin:
 * {"id", "config": {"transforms": ..., "transforms.a.type": ..., "predicates": ...}, "records": [...]},
 * a record being {"topic", "kafkaPartition", "key", "value", "headers": [{"key", "value"}], "timestamp"}.
 * Prints one JSON array: per case {"id", "configError"} or {"id", "results": [...]}, each result
 * {"record": {...}}, {"dropped": true} or {"error": "..."}. Header values are printed as
 * SimpleHeaderConverter writes them (text), null as null.
 *
 * Values: an integer is a Long, another number a Double, {"$bytes": base64} a byte[],
 * {"$date": millis} a java.util.Date, {"$double": "NaN" | "Infinity" | "-Infinity"} that Double;
 * floats are printed as the double they widen to.
 *
 * With the argument {@code json}, stdin is instead a JSON array of values (in the same form), and
 * the output one {"json": text or null} or {"error": "..."} per value: what JsonConverter with
 * {@code schemas.enable=false} writes for it as a record value without a schema, for
 * test/integration/json-converter.int.test.ts.
 */
public final class Harness {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final SimpleHeaderConverter HEADER_CONVERTER = new SimpleHeaderConverter();

    private static final class Stage {
        Transformation<SourceRecord> transformation;
        Predicate<SourceRecord> predicate;
        boolean negate;
    }

    public static void main(String[] args) throws Exception {
        HEADER_CONVERTER.configure(Map.of());
        InputStream in = System.in;
        JsonNode cases = MAPPER.readTree(in);
        ArrayNode out = NODES.arrayNode();
        if (args.length > 0 && args[0].equals("json")) {
            JsonConverter converter = new JsonConverter();
            converter.configure(Map.of("schemas.enable", "false"), false);
            for (JsonNode v : cases) {
                ObjectNode one = out.addObject();
                try {
                    byte[] bytes = converter.fromConnectData("t", null, toJava(v));
                    if (bytes == null) one.putNull("json");
                    else one.put("json", new String(bytes, StandardCharsets.UTF_8));
                } catch (Throwable e) {
                    one.put("error", String.valueOf(e));
                }
            }
        } else {
            for (JsonNode c : cases) out.add(runCase(c));
        }
        System.out.write(MAPPER.writeValueAsBytes(out));
        System.out.flush();
    }

    private static ObjectNode runCase(JsonNode c) {
        ObjectNode result = NODES.objectNode();
        result.put("id", c.get("id").asText());
        List<Stage> stages;
        try {
            stages = configure(c.get("config"));
        } catch (Throwable e) {
            result.put("configError", String.valueOf(e));
            return result;
        }
        ArrayNode results = result.putArray("results");
        for (JsonNode r : c.get("records")) {
            ObjectNode one = NODES.objectNode();
            try {
                SourceRecord record = toRecord(r);
                for (Stage s : stages) {
                    if (record == null) break;
                    if (s.predicate == null || s.negate ^ s.predicate.test(record)) record = s.transformation.apply(record);
                }
                if (record == null) one.put("dropped", true);
                else one.set("record", fromRecord(record));
            } catch (Throwable e) {
                one.put("error", String.valueOf(e));
            }
            results.add(one);
        }
        return result;
    }

    @SuppressWarnings("unchecked")
    private static List<Stage> configure(JsonNode config) throws Exception {
        Map<String, String> props = new LinkedHashMap<>();
        config.fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
        Map<String, Predicate<SourceRecord>> predicates = new LinkedHashMap<>();
        for (String alias : list(props.get("predicates"))) {
            Predicate<SourceRecord> p = (Predicate<SourceRecord>) Class.forName(props.get("predicates." + alias + ".type"))
                .getDeclaredConstructor().newInstance();
            p.configure(sub(props, "predicates." + alias + ".", false));
            predicates.put(alias, p);
        }
        List<Stage> stages = new ArrayList<>();
        for (String alias : list(props.get("transforms"))) {
            Stage s = new Stage();
            s.transformation = (Transformation<SourceRecord>) Class.forName(props.get("transforms." + alias + ".type"))
                .getDeclaredConstructor().newInstance();
            s.transformation.configure(sub(props, "transforms." + alias + ".", true));
            String predicate = props.get("transforms." + alias + ".predicate");
            if (predicate != null) {
                s.predicate = predicates.get(predicate);
                if (s.predicate == null) throw new IllegalArgumentException("unknown predicate " + predicate);
            }
            s.negate = Boolean.parseBoolean(props.getOrDefault("transforms." + alias + ".negate", "false"));
            stages.add(s);
        }
        return stages;
    }

    private static List<String> list(String value) {
        List<String> out = new ArrayList<>();
        if (value == null) return out;
        for (String s : value.split(",")) if (!s.trim().isEmpty()) out.add(s.trim());
        return out;
    }

    private static Map<String, String> sub(Map<String, String> props, String prefix, boolean transform) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : props.entrySet()) {
            if (!e.getKey().startsWith(prefix)) continue;
            String name = e.getKey().substring(prefix.length());
            if (name.equals("type") || (transform && (name.equals("predicate") || name.equals("negate")))) continue;
            out.put(name, e.getValue());
        }
        return out;
    }

    private static SourceRecord toRecord(JsonNode r) {
        ConnectHeaders headers = new ConnectHeaders();
        JsonNode hs = r.get("headers");
        if (hs != null) for (JsonNode h : hs) headers.add(h.get("key").asText(), toJava(h.get("value")), null);
        Integer partition = r.hasNonNull("kafkaPartition") ? r.get("kafkaPartition").asInt() : null;
        Long timestamp = r.hasNonNull("timestamp") ? r.get("timestamp").asLong() : null;
        return new SourceRecord(Map.of("p", 0), Map.of("o", 0), r.get("topic").asText(), partition,
            null, toJava(r.get("key")), null, toJava(r.get("value")), timestamp, headers);
    }

    private static ObjectNode fromRecord(SourceRecord record) {
        ObjectNode o = NODES.objectNode();
        o.put("topic", record.topic());
        if (record.kafkaPartition() != null) o.put("kafkaPartition", record.kafkaPartition());
        o.set("key", fromJava(record.key()));
        o.set("value", fromJava(record.value()));
        ArrayNode headers = o.putArray("headers");
        for (Header h : record.headers()) {
            ObjectNode hn = headers.addObject();
            hn.put("key", h.key());
            byte[] bytes = HEADER_CONVERTER.fromConnectHeader(record.topic(), h.key(), h.schema(), h.value());
            if (bytes == null) hn.putNull("value");
            else hn.put("value", new String(bytes, StandardCharsets.UTF_8));
        }
        if (record.timestamp() != null) o.put("timestamp", record.timestamp());
        return o;
    }

    private static Object toJava(JsonNode n) {
        if (n == null || n.isNull()) return null;
        if (n.isObject()) {
            if (n.size() == 1 && n.has("$bytes")) return Base64.getDecoder().decode(n.get("$bytes").asText());
            if (n.size() == 1 && n.has("$date")) return new Date(n.get("$date").asLong());
            if (n.size() == 1 && n.has("$double")) return Double.valueOf(n.get("$double").asText());
            Map<String, Object> m = new LinkedHashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                m.put(e.getKey(), toJava(e.getValue()));
            }
            return m;
        }
        if (n.isArray()) {
            List<Object> l = new ArrayList<>();
            for (JsonNode x : n) l.add(toJava(x));
            return l;
        }
        if (n.isIntegralNumber()) return n.asLong();
        if (n.isNumber()) return n.asDouble();
        if (n.isBoolean()) return n.asBoolean();
        return n.asText();
    }

    private static JsonNode fromJava(Object v) {
        if (v == null) return NODES.nullNode();
        if (v instanceof Map) {
            ObjectNode o = NODES.objectNode();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) o.set(String.valueOf(e.getKey()), fromJava(e.getValue()));
            return o;
        }
        if (v instanceof List) {
            ArrayNode a = NODES.arrayNode();
            for (Object x : (List<?>) v) a.add(fromJava(x));
            return a;
        }
        if (v instanceof byte[]) return NODES.objectNode().put("$bytes", Base64.getEncoder().encodeToString((byte[]) v));
        if (v instanceof Date) return NODES.objectNode().put("$date", ((Date) v).getTime());
        if (v instanceof Float || v instanceof Double) return NODES.numberNode(((Number) v).doubleValue());
        if (v instanceof Number) return NODES.numberNode(((Number) v).longValue());
        if (v instanceof Boolean) return NODES.booleanNode((Boolean) v);
        if (v instanceof String) return NODES.textNode((String) v);
        return NODES.objectNode().put("$unsupported", v.getClass().getName() + ": " + v);
    }
}
