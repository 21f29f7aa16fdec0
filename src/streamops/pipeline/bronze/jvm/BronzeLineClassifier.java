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
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF3;

/**
 * Classifies one landing line inside Spark's JVM: the same rules, reasons and schema-variation
 * hash as pipeline/bronze/bronze_classifier.py (the reference, and the fallback where no JDK is
 * installed), without sending every line through a Python worker. The test
 * tests/pipeline/test_jvm_classifier.py checks the two agree on every generated bad kind and drift.
 *
 * Returns (event_type, event_id, event_time_text, schema_hash, quarantine_reason, quarantine_detail).
 * The rules and their order are the README's "One judgement per line": byte rules (empty, size,
 * UTF-8, structural depth, NUL) before Jackson sees the line, so no parser limit or encoding
 * detection decides anything; then strict JSON; then the event rules; then the rules judged once
 * per shape (repeated keys, numbers beyond 64-bit, keys that cannot be columns, the same as
 * pipeline/records/column_names.py); last, lone UTF-16 surrogate escapes. Nothing a line holds makes this
 * function throw: anything unforeseen is quarantined as `unprocessable`.
 * A line of strict, unremarkable JSON takes FastLineScan's one walk over its bytes instead of
 * the byte rules and Jackson; every other line takes them, so they alone word every verdict.
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
                  .maxNumberLength(Integer.MAX_VALUE)
                  .build())
          .build();
  private static final Pattern EVENT_TYPE = Pattern.compile("^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,127}$");
  private static final int MAX_CACHED_SHAPES = 100_000;
  private static final ConcurrentHashMap<Shape, Verdict> VERDICT_BY_SHAPE = new ConcurrentHashMap<>();
  private static final int MAX_CACHED_KEYS = 100_000;
  private static final ConcurrentHashMap<String, long[]> KEY_CODES = new ConcurrentHashMap<>();
  private static final Set<String> RESERVED_COLUMNS =
      Set.of(
          "_event_time", "_ingest_time", "_source_file", "_bronze_batch_id", "_schema_hash",
          "_rescued_data", "_corrupt_record");
  private static final String FORBIDDEN_IN_NAMES = " ,;{}()\n\t=";
  private static final String TOMBSTONE_DETAIL = "a Kafka record without a value (the delete marker of its key)";
  private static final ConcurrentHashMap<String, Boolean> VALID_TYPES = new ConcurrentHashMap<>();

  @Override
  public Row call(byte[] line, Integer maxBytes, Integer maxDepth) {
    try {
      return classify(line, maxBytes, maxDepth);
    } catch (RuntimeException | StackOverflowError error) {
      return quarantine("unprocessable", "stage classify: " + error.getClass().getSimpleName() + ": " + firstLine(error));
    }
  }

  private static Row classify(byte[] line, int maxBytes, int maxDepth) {
    if (line == null) {
      return quarantine("tombstone", TOMBSTONE_DETAIL);
    }
    if (isBlank(line)) {
      return quarantine("empty_line", null);
    }
    if (line.length > maxBytes) {
      return quarantine("too_large", line.length + " bytes > limit " + maxBytes);
    }
    Scan scan = FastLineScan.scan(line, maxDepth);
    boolean loneSurrogate = false;
    if (scan == null) {
      ByteScan bytes = ByteScan.of(line);
      if (bytes.invalidUtf8At >= 0) {
        return quarantine("invalid_utf8", "invalid UTF-8 at byte " + bytes.invalidUtf8At);
      }
      int depth = bytes.maxNesting - 1;
      if (depth > maxDepth) {
        return quarantine("too_deep", "depth " + depth + " > limit " + maxDepth);
      }
      if (bytes.hasNul) {
        return quarantine("malformed_json", "a raw NUL byte is not JSON");
      }
      loneSurrogate = bytes.loneSurrogate;
      scan = new Scan();
      try (JsonParser parser = JSON.createParser(line)) {
        JsonToken first = parser.nextToken();
        if (first != JsonToken.START_OBJECT) {
          scan.topLevel = first;
          skipValue(parser, first);
        } else {
          scanObject(parser, scan, true);
        }
        if (parser.nextToken() != null) {
          return quarantine("malformed_json", "trailing data after the JSON value");
        }
      } catch (java.io.IOException error) {
        return quarantine("malformed_json", firstLine(error));
      }
      if (scan.topLevel != null) {
        return quarantine("not_an_object", "top-level JSON " + kindName(scan.topLevel));
      }
      if (!scan.hasEventType || scan.eventTypeToken == JsonToken.VALUE_NULL) {
        return quarantine("missing_event_type", null);
      }
    }
    if (scan.eventType == null || !isValidEventType(scan.eventType)) {
      String shown = scan.eventType != null ? scan.eventType : scan.eventTypeRaw;
      return quarantine("invalid_event_type", "event_type=" + shown);
    }
    Shape shape = new Shape(scan.low, scan.high);
    Verdict verdict = VERDICT_BY_SHAPE.get(shape);
    if (verdict == null) {
      verdict = judgeShape(line);
      if (VERDICT_BY_SHAPE.size() >= MAX_CACHED_SHAPES) {
        VERDICT_BY_SHAPE.clear();
      }
      VERDICT_BY_SHAPE.put(shape, verdict);
    }
    if (verdict.reason != null) {
      return quarantine(verdict.reason, verdict.detail);
    }
    if (loneSurrogate) {
      return quarantine("invalid_utf8", "a \\u escape makes a lone UTF-16 surrogate, which has no UTF-8 form");
    }
    return RowFactory.create(scan.eventType, scan.eventId, scan.eventTime, verdict.hash, null, null);
  }

  private static String firstLine(Throwable error) {
    String message = String.valueOf(error.getMessage());
    int cut = message.indexOf('\n');
    return cut < 0 ? message : message.substring(0, cut);
  }

  /**
   * What the bytes say before any parsing: where UTF-8 breaks, the deepest nesting of brackets
   * outside strings, raw NUL bytes, and \\u escapes that leave a UTF-16 surrogate unpaired. The
   * Python reference computes the same (pipeline/records/strict_json.py).
   */
  private static final class ByteScan {
    int invalidUtf8At = -1;
    int maxNesting;
    boolean hasNul;
    boolean loneSurrogate;

    static ByteScan of(byte[] b) {
      ByteScan scan = new ByteScan();
      int n = b.length;
      int depth = 0;
      boolean inString = false;
      int i = 0;
      while (i < n) {
        int c = b[i] & 0xFF;
        if (c >= 0x80) {
          int length = utf8Length(b, i);
          if (length < 0) {
            scan.invalidUtf8At = i;
            return scan;
          }
          i += length;
          continue;
        }
        if (c == 0) {
          scan.hasNul = true;
        }
        if (inString) {
          if (c == '"') {
            inString = false;
          } else if (c == '\\') {
            i += scan.escapeLength(b, i);
            continue;
          }
        } else if (c == '"') {
          inString = true;
        } else if (c == '{' || c == '[') {
          depth++;
          scan.maxNesting = Math.max(scan.maxNesting, depth);
        } else if (c == '}' || c == ']') {
          depth--;
        }
        i++;
      }
      return scan;
    }

    /** Bytes an escape at `i` takes; notes a lone surrogate. A non-ASCII byte is never escaped here. */
    private int escapeLength(byte[] b, int i) {
      if (i + 1 >= b.length || (b[i + 1] & 0xFF) >= 0x80) {
        return 1;
      }
      if (b[i + 1] != 'u') {
        return 2;
      }
      int length = unicodeEscapeLength(b, i);
      if (length == LONE_SURROGATE) {
        loneSurrogate = true;
        return 6;
      }
      return length > 0 ? length : 2;
    }
  }

  static final int LONE_SURROGATE = 0;

  /**
   * Bytes the `\\uXXXX` escape at `i` takes: 6, or 12 for a high surrogate escape with its low
   * one; LONE_SURROGATE for a surrogate escape without its pair; -1 where XXXX is not hex.
   */
  static int unicodeEscapeLength(byte[] b, int i) {
    int code = hex4(b, i + 2);
    if (code >= 0xD800 && code <= 0xDBFF) {
      boolean paired = i + 7 < b.length && b[i + 6] == '\\' && b[i + 7] == 'u';
      int low = paired ? hex4(b, i + 8) : -1;
      return low >= 0xDC00 && low <= 0xDFFF ? 12 : LONE_SURROGATE;
    }
    if (code >= 0xDC00 && code <= 0xDFFF) {
      return LONE_SURROGATE;
    }
    return code >= 0 ? 6 : -1;
  }

  private static int hex4(byte[] b, int at) {
    if (at + 4 > b.length) {
      return -1;
    }
    int code = 0;
    for (int k = at; k < at + 4; k++) {
      int digit = Character.digit(b[k], 16);
      if (digit < 0) {
        return -1;
      }
      code = (code << 4) | digit;
    }
    return code;
  }

  private record Shape(long low, long high) {}

  /**
   * What one pass over an event learns; `low`/`high` fingerprint keys in order with kinds. Each
   * pass (Jackson's here, FastLineScan's) seeds its own chains.
   */
  static final class Scan {
    long low;
    long high;
    JsonToken topLevel;
    boolean hasEventType;

    Scan() {
      this(0x243F6A8885A308D3L, 0x13198A2E03707344L);
    }

    Scan(long low, long high) {
      this.low = low;
      this.high = high;
    }

    void add(long value) {
      low = mix(low ^ value);
      high = mix(high + value * 0x9E3779B97F4A7C15L);
    }

    /**
     * A key enters as its own pair of chains over its length and characters, worked out once per
     * distinct key: Jackson hands back one canonical String per name, so the lookup is a cached
     * hash and an identity compare, where mixing every character of every key was the largest
     * single cost of classifying a line.
     */
    void addKey(String key) {
      long[] code = KEY_CODES.get(key);
      if (code == null) {
        Scan chains = new Scan();
        chains.add(0x100000000L | key.length());
        for (int i = 0; i < key.length(); i++) {
          chains.add(key.charAt(i));
        }
        code = new long[] {chains.low, chains.high};
        if (KEY_CODES.size() >= MAX_CACHED_KEYS) {
          KEY_CODES.clear();
        }
        KEY_CODES.put(key, code);
      }
      addCode(code[0], code[1]);
    }

    /** A key's own pair of chains enters the line's. */
    void addCode(long keyLow, long keyHigh) {
      low = mix(low ^ keyLow);
      high = mix(high + keyHigh * 0x9E3779B97F4A7C15L);
    }
    JsonToken eventTypeToken;
    String eventType;
    String eventTypeRaw;
    String eventId;
    String eventTime;
  }

  private static void scanObject(JsonParser parser, Scan scan, boolean top)
      throws java.io.IOException {
    scan.add('{');
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String key = parser.currentName();
      scan.addKey(key);
      JsonToken value = parser.nextToken();
      if (top) {
        readTopLevelField(parser, scan, key, value);
      }
      scanValue(parser, scan, value);
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
    if (kindCode(parser, value) == 'i') {
      return Long.toString(parser.getLongValue());
    }
    return null;
  }

  private static void scanValue(JsonParser parser, Scan scan, JsonToken value)
      throws java.io.IOException {
    if (value == JsonToken.START_OBJECT) {
      scanObject(parser, scan, false);
    } else if (value == JsonToken.START_ARRAY) {
      scan.add('[');
      char previous = 0;
      JsonToken element;
      while ((element = parser.nextToken()) != JsonToken.END_ARRAY) {
        if (element.isStructStart()) {
          scanValue(parser, scan, element);
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
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  private static void skipValue(JsonParser parser, JsonToken token) throws java.io.IOException {
    if (token != null && token.isStructStart()) {
      parser.skipChildren();
    }
  }

  /**
   * i(nteger), f(loat), s(tring), b(oolean), n(ull), or o: a number no 64-bit integer or double
   * holds (an integer beyond int64, a float that overflows to infinity).
   */
  private static char kindCode(JsonParser parser, JsonToken token) throws java.io.IOException {
    switch (token) {
      case VALUE_NUMBER_INT:
        return parser.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? 'o' : 'i';
      case VALUE_NUMBER_FLOAT:
        return mayOverflow(parser) && Double.isInfinite(parser.getDoubleValue()) ? 'o' : 'f';
      case VALUE_STRING:
        return 's';
      case VALUE_TRUE:
      case VALUE_FALSE:
        return 'b';
      default:
        return 'n';
    }
  }

  /** Only a float with an exponent or over 308 characters can overflow a double. */
  private static boolean mayOverflow(JsonParser parser) throws java.io.IOException {
    int length = parser.getTextLength();
    if (length > 308) {
      return true;
    }
    char[] text = parser.getTextCharacters();
    int offset = parser.getTextOffset();
    for (int k = offset; k < offset + length; k++) {
      if (text[k] == 'e' || text[k] == 'E') {
        return true;
      }
    }
    return false;
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

  // -- once per shape: the verdict and the signature (pipeline/registry/schema_variation.py) --------------

  /** A shape's verdict: its variation hash, or the reason its events cannot be stored. */
  private static final class Verdict {
    final String hash;
    final String reason;
    final String detail;

    Verdict(String hash, String reason, String detail) {
      this.hash = hash;
      this.reason = reason;
      this.detail = detail;
    }
  }

  /** Everything one walk over an event learns for its shape's verdict. */
  private static final class ShapeWalk {
    final Set<String> paths = new HashSet<>();
    final Map<String, String> columns = new HashMap<>();
    String duplicate;
    String outOfRange;
    String unusable;

    void unusable(String why) {
      if (unusable == null) {
        unusable = why;
      }
    }
  }

  static Verdict judgeShape(byte[] line) {
    ShapeWalk walk = new ShapeWalk();
    try (JsonParser parser = JSON.createParser(line)) {
      parser.nextToken();
      walkObject(parser, "", "", walk);
    } catch (java.io.IOException error) {
      throw new IllegalStateException("a line that parsed once failed to parse again", error);
    }
    if (walk.duplicate != null) {
      return new Verdict(null, "duplicate_key", "key '" + walk.duplicate + "' appears twice in one object");
    }
    if (walk.outOfRange != null) {
      return new Verdict(null, "number_out_of_range", "`" + walk.outOfRange + "` does not fit a 64-bit integer or double");
    }
    if (walk.unusable != null) {
      return new Verdict(null, "unusable_key", walk.unusable);
    }
    return new Verdict(hashOf(walk.paths), null, null);
  }

  /**
   * One object: its keys (repeats, empty keys, keys that are one column), each value, and, while
   * `columnPrefix` is not null (objects outside arrays), the flattened column of each key.
   */
  private static void walkObject(JsonParser parser, String prefix, String columnPrefix, ShapeWalk walk)
      throws java.io.IOException {
    Set<String> keys = new HashSet<>();
    Map<String, String> sameColumn = new HashMap<>();
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String key = parser.currentName();
      if (!keys.add(key) && walk.duplicate == null) {
        walk.duplicate = key;
      }
      if (key.isEmpty()) {
        walk.unusable("an empty key cannot name a column");
      } else {
        String other = sameColumn.putIfAbsent(folded(columnName(key)), key);
        if (other != null) {
          walk.unusable("keys '" + other + "' and '" + key + "' are the same column `" + columnName(key) + "`");
        }
      }
      String path = prefix + key;
      JsonToken value = parser.nextToken();
      String column = columnPrefix == null ? null : columnPrefix + columnName(key);
      if (column != null && value != JsonToken.START_OBJECT) {
        String folded = folded(column);
        if (RESERVED_COLUMNS.contains(folded)) {
          walk.unusable("key '" + path + "' is the reserved column `" + column + "`");
        }
        String other = walk.columns.putIfAbsent(folded, path);
        if (other != null) {
          walk.unusable("keys '" + other + "' and '" + path + "' are the same column `" + column + "`");
        }
      }
      walkValue(parser, value, path, column, walk);
    }
  }

  private static void walkValue(JsonParser parser, JsonToken value, String path, String column, ShapeWalk walk)
      throws java.io.IOException {
    switch (value) {
      case VALUE_NULL:
        return;
      case START_OBJECT:
        walk.paths.add(path + ":object");
        walkObject(parser, path + ".", column == null ? null : column + "__", walk);
        return;
      case START_ARRAY:
        walk.paths.add(path + ":array");
        JsonToken element;
        while ((element = parser.nextToken()) != JsonToken.END_ARRAY) {
          walkValue(parser, element, path + "[]", null, walk);
        }
        return;
      case VALUE_STRING:
        walk.paths.add(path + ":string");
        return;
      case VALUE_TRUE:
      case VALUE_FALSE:
        walk.paths.add(path + ":bool");
        return;
      default:
        char kind = kindCode(parser, value);
        if (kind == 'o' && walk.outOfRange == null) {
          walk.outOfRange = path.isEmpty() ? "(top level)" : path;
        }
        walk.paths.add(path + (kind == 'i' ? ":integer" : ":float"));
    }
  }

  /** The column a key becomes: Delta's forbidden characters and control characters become '_'. */
  static String columnName(String key) {
    StringBuilder name = null;
    for (int k = 0; k < key.length(); k++) {
      char c = key.charAt(k);
      if (c < 0x20 || c == 0x7F || FORBIDDEN_IN_NAMES.indexOf(c) >= 0) {
        if (name == null) {
          name = new StringBuilder(key);
        }
        name.setCharAt(k, '_');
      }
    }
    return name == null ? key : name.toString();
  }

  private static String folded(String name) {
    return name.toLowerCase(Locale.ROOT);
  }

  static String hashOf(Set<String> paths) {
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

  /**
   * Length of the strict UTF-8 sequence at `i` (no overlongs, no surrogates, nothing above
   * U+10FFFF, as CPython decodes), or -1 where it is invalid.
   */
  static int utf8Length(byte[] bytes, int i) {
    int b = bytes[i] & 0xFF;
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
      return -1;
    }
    int code = b & (0x3F >> need);
    for (int k = 1; k <= need; k++) {
      if (i + k >= bytes.length) {
        return -1;
      }
      int c = bytes[i + k] & 0xFF;
      if ((c & 0xC0) != 0x80) {
        return -1;
      }
      code = (code << 6) | (c & 0x3F);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return -1;
    }
    return need + 1;
  }

  private static Row quarantine(String reason, String detail) {
    return RowFactory.create(null, null, null, null, reason, detail);
  }
}
