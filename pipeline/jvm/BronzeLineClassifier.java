package streamops.jvm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF3;

/**
 * Classifies one landing line inside Spark's JVM: the same rules, reasons and schema-variation
 * hash as pipeline/bronze_classifier.py (the reference, and the fallback where no JDK is
 * installed), without sending every line through a Python worker. The test
 * tests/pipeline/test_jvm_classifier.py checks the two agree on every generated bad kind and drift.
 *
 * Returns (event_type, event_id, event_time_text, schema_hash, quarantine_reason, quarantine_detail).
 * Events of one variation share a shape (keys in order, value kinds), so the hash is computed
 * once per shape and looked up afterwards. The shape is kept as a 128-bit fingerprint (two
 * independently seeded splitmix64 chains over keys, kinds and nesting) rather than a string, which
 * halves the per-line cost; the variation hash itself is still SHA-256 of the sorted paths.
 */
public final class BronzeLineClassifier implements UDF3<byte[], Integer, Integer, Row> {
  private static final JsonFactory JSON =
      JsonFactory.builder()
          .streamReadConstraints(
              StreamReadConstraints.builder()
                  .maxNestingDepth(Integer.MAX_VALUE)
                  .maxStringLength(Integer.MAX_VALUE)
                  .maxNameLength(Integer.MAX_VALUE)
                  .build())
          .build();
  private static final Pattern EVENT_TYPE = Pattern.compile("^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,127}$");
  private static final int MAX_CACHED_SHAPES = 100_000;
  private static final ConcurrentHashMap<Shape, String> HASH_BY_SHAPE = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, Boolean> VALID_TYPES = new ConcurrentHashMap<>();

  @Override
  public Row call(byte[] line, Integer maxBytes, Integer maxDepth) {
    if (line == null || isBlank(line)) {
      return quarantine("empty_line", null);
    }
    if (line.length > maxBytes) {
      return quarantine("too_large", line.length + " bytes > limit " + maxBytes);
    }
    if (!isValidUtf8(line)) {
      return quarantine("invalid_utf8", "bytes are not valid UTF-8");
    }
    Scan scan = new Scan();
    try (JsonParser parser = JSON.createParser(line)) {
      JsonToken first = parser.nextToken();
      if (first != JsonToken.START_OBJECT) {
        scan.topLevel = first;
        skipValue(parser, first);
      } else {
        scanObject(parser, scan, 1, true);
      }
      if (parser.nextToken() != null) {
        return quarantine("malformed_json", "trailing data after the JSON value");
      }
    } catch (java.io.IOException error) {
      String message = String.valueOf(error.getMessage());
      int cut = message.indexOf('\n');
      return quarantine("malformed_json", (cut < 0 ? message : message.substring(0, cut)));
    }
    if (scan.topLevel != null) {
      return quarantine("not_an_object", "top-level JSON " + kindName(scan.topLevel));
    }
    if (!scan.hasEventType || scan.eventTypeToken == JsonToken.VALUE_NULL) {
      return quarantine("missing_event_type", null);
    }
    if (scan.eventType == null || !isValidEventType(scan.eventType)) {
      String shown = scan.eventType != null ? scan.eventType : scan.eventTypeRaw;
      return quarantine("invalid_event_type", "event_type=" + shown);
    }
    int depth = scan.maxLevel - 1;
    if (depth > maxDepth) {
      return quarantine("too_deep", "depth " + depth + " > limit " + maxDepth);
    }
    Shape shape = new Shape(scan.low, scan.high);
    String hash = HASH_BY_SHAPE.get(shape);
    if (hash == null) {
      hash = hashOf(line);
      if (HASH_BY_SHAPE.size() >= MAX_CACHED_SHAPES) {
        HASH_BY_SHAPE.clear();
      }
      HASH_BY_SHAPE.put(shape, hash);
    }
    return RowFactory.create(scan.eventType, scan.eventId, scan.eventTime, hash, null, null);
  }

  private record Shape(long low, long high) {}

  /** What one pass over an event learns; `low`/`high` fingerprint keys in order with kinds. */
  private static final class Scan {
    long low = 0x243F6A8885A308D3L;
    long high = 0x13198A2E03707344L;
    JsonToken topLevel;
    int maxLevel;
    boolean hasEventType;

    void add(long value) {
      low = mix(low ^ value);
      high = mix(high + value * 0x9E3779B97F4A7C15L);
    }

    void addKey(String key) {
      add(0x100000000L | key.length());
      for (int i = 0; i < key.length(); i++) {
        add(key.charAt(i));
      }
    }
    JsonToken eventTypeToken;
    String eventType;
    String eventTypeRaw;
    String eventId;
    String eventTime;
  }

  private static void scanObject(JsonParser parser, Scan scan, int level, boolean top)
      throws java.io.IOException {
    scan.maxLevel = Math.max(scan.maxLevel, level);
    scan.add('{');
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String key = parser.currentName();
      scan.addKey(key);
      JsonToken value = parser.nextToken();
      if (top) {
        readTopLevelField(parser, scan, key, value);
      }
      scanValue(parser, scan, value, level);
    }
    scan.add('}');
  }

  private static void readTopLevelField(JsonParser parser, Scan scan, String key, JsonToken value)
      throws java.io.IOException {
    switch (key) {
      case "event_type":
        scan.hasEventType = true;
        scan.eventTypeToken = value;
        scan.eventType = value == JsonToken.VALUE_STRING ? parser.getText() : null;
        scan.eventTypeRaw = value.isStructStart() ? kindName(value) : parser.getText();
        break;
      case "event_id":
        scan.eventId = idText(parser, value);
        break;
      case "event_time":
        scan.eventTime = idText(parser, value);
        break;
      default:
        break;
    }
  }

  /** Ids and times are kept as text when they are strings or integers, else null. */
  private static String idText(JsonParser parser, JsonToken value) throws java.io.IOException {
    if (value == JsonToken.VALUE_STRING) {
      return parser.getText();
    }
    if (isInteger(parser, value)) {
      return parser.getBigIntegerValue().toString();
    }
    return null;
  }

  private static void scanValue(JsonParser parser, Scan scan, JsonToken value, int level)
      throws java.io.IOException {
    if (value == JsonToken.START_OBJECT) {
      scanObject(parser, scan, level + 1, false);
    } else if (value == JsonToken.START_ARRAY) {
      scan.maxLevel = Math.max(scan.maxLevel, level + 1);
      scan.add('[');
      char previous = 0;
      JsonToken element;
      while ((element = parser.nextToken()) != JsonToken.END_ARRAY) {
        if (element.isStructStart()) {
          scanValue(parser, scan, element, level + 1);
          previous = 0;
        } else {
          char kind = kindCode(parser, element);
          if (kind != previous) {
            scan.add(kind);
            previous = kind;
          }
        }
      }
      scan.add(']');
    } else {
      scan.add(kindCode(parser, value));
    }
  }

  /** splitmix64's finaliser: every input bit affects every output bit. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  private static void skipValue(JsonParser parser, JsonToken token) throws java.io.IOException {
    if (token != null && token.isStructStart()) {
      parser.skipChildren();
    }
  }

  private static final java.math.BigInteger MIN_INT = java.math.BigInteger.valueOf(Long.MIN_VALUE);
  private static final java.math.BigInteger MAX_UINT = java.math.BigInteger.ONE.shiftLeft(64).subtract(java.math.BigInteger.ONE);

  /** An integer as Python's JSON parser sees it: beyond int64/uint64 it becomes a float. */
  private static boolean isInteger(JsonParser parser, JsonToken token) throws java.io.IOException {
    if (token != JsonToken.VALUE_NUMBER_INT) {
      return false;
    }
    if (parser.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
      return true;
    }
    java.math.BigInteger value = parser.getBigIntegerValue();
    return value.compareTo(MIN_INT) >= 0 && value.compareTo(MAX_UINT) <= 0;
  }

  private static char kindCode(JsonParser parser, JsonToken token) throws java.io.IOException {
    if (token == JsonToken.VALUE_NUMBER_INT) {
      return isInteger(parser, token) ? 'i' : 'f';
    }
    switch (token) {
      case VALUE_STRING:
        return 's';
      case VALUE_NUMBER_FLOAT:
        return 'f';
      case VALUE_TRUE:
      case VALUE_FALSE:
        return 'b';
      default:
        return 'n';
    }
  }

  private static String kindName(JsonToken token) {
    switch (token) {
      case START_ARRAY:
        return "array";
      case START_OBJECT:
        return "object";
      case VALUE_STRING:
        return "string";
      case VALUE_TRUE:
      case VALUE_FALSE:
        return "boolean";
      case VALUE_NULL:
        return "null";
      default:
        return "number";
    }
  }

  // -- the signature itself, once per shape (pipeline/schema_variation.py defines it) ------------

  static String hashOf(byte[] line) {
    Set<String> paths = new HashSet<>();
    try (JsonParser parser = JSON.createParser(line)) {
      parser.nextToken();
      collectObject(parser, "", paths);
    } catch (java.io.IOException error) {
      throw new IllegalStateException("a line that parsed once failed to parse again", error);
    }
    List<byte[]> sorted = new ArrayList<>(paths.size());
    for (String path : paths) {
      sorted.add(path.getBytes(StandardCharsets.UTF_8));
    }
    sorted.sort(Arrays::compareUnsigned);
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      for (int i = 0; i < sorted.size(); i++) {
        if (i > 0) {
          sha.update((byte) '\n');
        }
        sha.update(sorted.get(i));
      }
      byte[] digest = sha.digest();
      StringBuilder hex = new StringBuilder(16);
      for (int i = 0; i < 8; i++) {
        hex.append(Character.forDigit((digest[i] >> 4) & 0xF, 16));
        hex.append(Character.forDigit(digest[i] & 0xF, 16));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException error) {
      throw new IllegalStateException(error);
    }
  }

  private static void collectObject(JsonParser parser, String prefix, Set<String> paths)
      throws java.io.IOException {
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String path = prefix + parser.currentName();
      collectValue(parser, parser.nextToken(), path, paths);
    }
  }

  private static void collectValue(JsonParser parser, JsonToken value, String path, Set<String> paths)
      throws java.io.IOException {
    switch (value) {
      case VALUE_NULL:
        return;
      case START_OBJECT:
        paths.add(path + ":object");
        collectObject(parser, path + ".", paths);
        return;
      case START_ARRAY:
        paths.add(path + ":array");
        JsonToken element;
        while ((element = parser.nextToken()) != JsonToken.END_ARRAY) {
          collectValue(parser, element, path + "[]", paths);
        }
        return;
      case VALUE_STRING:
        paths.add(path + ":string");
        return;
      case VALUE_NUMBER_INT:
        paths.add(path + (isInteger(parser, value) ? ":integer" : ":float"));
        return;
      case VALUE_NUMBER_FLOAT:
        paths.add(path + ":float");
        return;
      default:
        paths.add(path + ":bool");
    }
  }

  // -- small checks -------------------------------------------------------------------------------

  private static boolean isValidEventType(String name) {
    Boolean known = VALID_TYPES.get(name);
    if (known == null) {
      known = EVENT_TYPE.matcher(name).matches() && !name.contains("..");
      if (VALID_TYPES.size() < MAX_CACHED_SHAPES) {
        VALID_TYPES.put(name, known);
      }
    }
    return known;
  }

  private static boolean isBlank(byte[] line) {
    for (byte b : line) {
      if (b != ' ' && b != '\t' && b != '\r' && b != '\n') {
        return false;
      }
    }
    return true;
  }

  /** Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF), as CPython decodes. */
  static boolean isValidUtf8(byte[] bytes) {
    int i = 0;
    int n = bytes.length;
    while (i < n) {
      int b = bytes[i] & 0xFF;
      if (b < 0x80) {
        i++;
        continue;
      }
      int need;
      int min;
      if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
        min = 0x80;
      } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        min = 0x800;
      } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        min = 0x10000;
      } else {
        return false;
      }
      int code = b & (0x3F >> need);
      for (int k = 1; k <= need; k++) {
        if (i + k >= n) {
          return false;
        }
        int c = bytes[i + k] & 0xFF;
        if ((c & 0xC0) != 0x80) {
          return false;
        }
        code = (code << 6) | (c & 0x3F);
      }
      if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
        return false;
      }
      i += need + 1;
    }
    return true;
  }

  private static Row quarantine(String reason, String detail) {
    return RowFactory.create(null, null, null, null, reason, detail);
  }
}
