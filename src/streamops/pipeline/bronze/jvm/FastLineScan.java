package streamops.jvm;

import java.nio.charset.StandardCharsets;

/**
 * The common line's pass, straight over its bytes: an object of strict JSON in strict UTF-8,
 * nested no deeper than allowed, whose event_type is a string, with no escape in a key or in the
 * event fields, no lone surrogate escape and no number that needs judging (exponents, over 18
 * digits). It learns what the byte rules and Jackson's pass learn (the shape fingerprint and the
 * event fields) in one walk, without a parser, a String per key or a token per value: those
 * were most of the JVM's time in bronze. Any byte it is not sure of makes it give up (null),
 * and the line takes the byte rules and Jackson's pass, which own every verdict on bad lines and
 * their wording; so this pass only has to be conservative, never complete.
 *
 * Its fingerprints come from differently seeded chains hashing key bytes a word at a time, so a
 * shape seen by both passes has two cache entries; neither pass can mistake the other's.
 */
final class FastLineScan {
  private static final long LOW_SEED = 0x6A09E667F3BCC908L;
  private static final long HIGH_SEED = 0xBB67AE8584CAA73BL;
  private static final long GOLDEN = 0x9E3779B97F4A7C15L;
  private static final int MAX_INTEGER_DIGITS = 18;
  private static final int MAX_FLOAT_CHARS = 308;
  private static final byte[] EVENT_TYPE = "event_type".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] EVENT_ID = "event_id".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] EVENT_TIME = "event_time".getBytes(StandardCharsets.US_ASCII);

  /** Thrown (without a stack) where the pass is not sure: the caller uses Jackson's pass. */
  private static final class NotSure extends Exception {
    private static final NotSure INSTANCE = new NotSure();

    private NotSure() {
      super(null, null, false, false);
    }
  }

  private final byte[] b;
  private final int maxNesting;
  private final BronzeLineClassifier.Scan scan = new BronzeLineClassifier.Scan(LOW_SEED, HIGH_SEED);
  private int i;
  private int nesting;

  private FastLineScan(byte[] line, int maxDepth) {
    this.b = line;
    this.maxNesting = maxDepth + 1;
  }

  /** The line's scan, or null when the byte rules and Jackson's pass must judge it. */
  static BronzeLineClassifier.Scan scan(byte[] line, int maxDepth) {
    FastLineScan pass = new FastLineScan(line, maxDepth);
    try {
      pass.skipSpace();
      pass.expect('{');
      pass.object(true);
      pass.skipSpace();
      if (pass.i != line.length || pass.scan.eventType == null) {
        return null;
      }
      return pass.scan;
    } catch (NotSure notSure) {
      return null;
    }
  }

  private void object(boolean top) throws NotSure {
    if (opens('{', '}')) {
      return;
    }
    do {
      expect('"');
      int keyStart = i;
      int keyEnd = string(false);
      addKey(keyStart, keyEnd);
      skipSpace();
      expect(':');
      skipSpace();
      if (top) {
        topLevelField(keyStart, keyEnd);
      } else {
        value();
      }
    } while (!ends('}'));
  }

  /** A top-level value; the event fields are kept as Jackson's pass keeps them. */
  private void topLevelField(int keyStart, int keyEnd) throws NotSure {
    boolean type = is(EVENT_TYPE, keyStart, keyEnd);
    boolean id = !type && is(EVENT_ID, keyStart, keyEnd);
    boolean time = !type && !id && is(EVENT_TIME, keyStart, keyEnd);
    if (!type && !id && !time) {
      value();
      return;
    }
    int start = i;
    char kind = value();
    String text = null;
    if (kind == 's') {
      text = unescaped(start + 1, i - 1);
    } else if (kind == 'i' && !type) {
      text = Long.toString(Long.parseLong(new String(b, start, i - start, StandardCharsets.US_ASCII)));
    } else if (type) {
      throw NotSure.INSTANCE;
    }
    if (type) {
      scan.hasEventType = true;
      scan.eventType = text;
    } else if (id) {
      scan.eventId = text;
    } else {
      scan.eventTime = text;
    }
  }

  /** A string's text where it has no escape (Jackson's pass decodes the others). */
  private String unescaped(int from, int to) throws NotSure {
    for (int k = from; k < to; k++) {
      if (b[k] == '\\') {
        throw NotSure.INSTANCE;
      }
    }
    return new String(b, from, to - from, StandardCharsets.UTF_8);
  }

  /** One value, added to the fingerprint as Jackson's pass adds it; its kind code, or the
   * bracket that opened it. */
  private char value() throws NotSure {
    int c = peek();
    if (c == '{') {
      i++;
      object(false);
      return '{';
    }
    if (c == '[') {
      i++;
      array();
      return '[';
    }
    char kind = scalar();
    scan.add(kind);
    return kind;
  }

  private void array() throws NotSure {
    if (opens('[', ']')) {
      return;
    }
    char previous = 0;
    do {
      int c = peek();
      if (c == '{' || c == '[') {
        value();
        previous = 0;
      } else {
        char kind = scalar();
        if (kind != previous) {
          scan.add(kind);
          previous = kind;
        }
      }
    } while (!ends(']'));
  }

  /** After an object's or array's opening bracket: true when it is empty, and now closed. */
  private boolean opens(char opening, char closing) throws NotSure {
    if (++nesting > maxNesting) {
      throw NotSure.INSTANCE;
    }
    scan.add(opening);
    skipSpace();
    if (peek() != closing) {
      return false;
    }
    i++;
    close(closing);
    return true;
  }

  /** After a member: true at the closing bracket, false after a comma. */
  private boolean ends(char closing) throws NotSure {
    skipSpace();
    int next = next();
    if (next == closing) {
      close(closing);
      return true;
    }
    if (next != ',') {
      throw NotSure.INSTANCE;
    }
    skipSpace();
    return false;
  }

  private void close(char closing) {
    scan.add(closing);
    nesting--;
  }

  /** A string, number or literal, not added to the fingerprint; its kind code (see kindCode). */
  private char scalar() throws NotSure {
    int c = next();
    switch (c) {
      case '"':
        string(true);
        return 's';
      case 't':
        literal("rue");
        return 'b';
      case 'f':
        literal("alse");
        return 'b';
      case 'n':
        literal("ull");
        return 'n';
      default:
        i--;
        return number();
    }
  }

  /** -?(0|[1-9][0-9]*)(\.[0-9]+)? with no exponent: 'i' up to 18 digits, 'f' up to 308 chars. */
  private char number() throws NotSure {
    int start = i;
    if (peek() == '-') {
      i++;
    }
    int first = next();
    if (first != '0') {  // after a lone zero a digit is not JSON: the caller finds no separator
      if (first < '1' || first > '9') {
        throw NotSure.INSTANCE;
      }
      skipDigits();
    }
    int digits = i - start - (b[start] == '-' ? 1 : 0);
    if (peek() == '.') {
      i++;
      if (skipDigits() == 0 || i - start > MAX_FLOAT_CHARS) {
        throw NotSure.INSTANCE;
      }
      notExponent();
      return 'f';
    }
    notExponent();
    if (digits > MAX_INTEGER_DIGITS) {
      throw NotSure.INSTANCE;
    }
    return 'i';
  }

  private void notExponent() throws NotSure {
    int c = peek();
    if (c == 'e' || c == 'E') {
      throw NotSure.INSTANCE;
    }
  }

  private int skipDigits() {
    int start = i;
    while (i < b.length && b[i] >= '0' && b[i] <= '9') {
      i++;
    }
    return i - start;
  }

  /** The rest of a string after its quote: UTF-8 checked, raw control bytes refused, escapes
   * checked where `escapes` allows them (in keys it does not); where the string ends. */
  private int string(boolean escapes) throws NotSure {
    while (true) {
      int c = next();
      if (c == '"') {
        return i - 1;
      }
      if (c < 0x20 || (c == '\\' && !escapes)) {
        throw NotSure.INSTANCE;
      }
      if (c == '\\') {
        i--;
        escape();
      } else if (c >= 0x80) {
        i--;
        utf8();
      }
    }
  }

  private void utf8() throws NotSure {
    int length = BronzeLineClassifier.utf8Length(b, i);
    if (length < 0) {
      throw NotSure.INSTANCE;
    }
    i += length;
  }

  private void escape() throws NotSure {
    if (i + 1 >= b.length) {
      throw NotSure.INSTANCE;
    }
    switch (b[i + 1]) {
      case '"', '\\', '/', 'b', 'f', 'n', 'r', 't' -> i += 2;
      case 'u' -> {
        int length = BronzeLineClassifier.unicodeEscapeLength(b, i);
        if (length <= 0) {  // not hex, or a lone surrogate: the byte rules and Jackson judge it
          throw NotSure.INSTANCE;
        }
        i += length;
      }
      default -> throw NotSure.INSTANCE;
    }
  }

  private void literal(String rest) throws NotSure {
    for (int k = 0; k < rest.length(); k++) {
      if (i >= b.length || b[i] != rest.charAt(k)) {
        throw NotSure.INSTANCE;
      }
      i++;
    }
  }

  /** A key as one pair of chains over its length and its bytes, eight at a time. */
  private void addKey(int from, int to) {
    int length = to - from;
    long low = LOW_SEED ^ length;
    long high = HIGH_SEED + length;
    for (int k = from; k < to; k += 8) {
      long word = 0;
      for (int at = Math.min(k + 8, to) - 1; at >= k; at--) {
        word = (word << 8) | (b[at] & 0xFFL);
      }
      low = BronzeLineClassifier.mix(low ^ word);
      high = BronzeLineClassifier.mix(high + word * GOLDEN);
    }
    scan.addCode(low, high);
  }

  private boolean is(byte[] name, int from, int to) {
    if (to - from != name.length) {
      return false;
    }
    for (int k = 0; k < name.length; k++) {
      if (b[from + k] != name[k]) {
        return false;
      }
    }
    return true;
  }

  private void skipSpace() {
    while (i < b.length) {
      byte c = b[i];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
        return;
      }
      i++;
    }
  }

  private void expect(char wanted) throws NotSure {
    if (next() != wanted) {
      throw NotSure.INSTANCE;
    }
  }

  private int next() throws NotSure {
    if (i >= b.length) {
      throw NotSure.INSTANCE;
    }
    return b[i++] & 0xFF;
  }

  private int peek() {
    return i < b.length ? b[i] & 0xFF : -1;
  }
}
