package streamops.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.datasources.CodecStreams;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.text.TextFileFormat;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import scala.Function1;
import scala.Option;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * Spark's text source with a cap on the bytes kept per line: the lines of landing files as
 * (value, line_offset, line_bytes). A line longer than `maxLineBytes` keeps its first
 * `maxLineBytes + 1` bytes (so every classifier judges it `too_large`), its byte offset in the
 * file and its whole length; the rest of it is read past, never held. Lines end as in Hadoop's
 * LineRecordReader (LF, CR or CRLF; the last line needs none), splits of a file own the lines
 * that start after their first byte (the first split: from byte 0) up to and including their
 * last byte, and a byte order mark opening a file is dropped, so a file reads as with Spark's
 * `text` source. Compressed files (by Hadoop's codecs) are read whole by one task.
 */
public final class LandingLines extends TextFileFormat {
  public static final String MAX_LINE_BYTES = "maxLineBytes";
  private static final int LONGEST_ARRAY = Integer.MAX_VALUE - 16;
  private static final StructType SCHEMA =
      new StructType(
          new StructField[] {
            DataTypes.createStructField("value", DataTypes.BinaryType, false),
            DataTypes.createStructField("line_offset", DataTypes.LongType, false),
            DataTypes.createStructField("line_bytes", DataTypes.LongType, false)
          });

  @Override
  public String shortName() {
    return "streamops-landing-lines";
  }

  @Override
  public Option<StructType> inferSchema(
      SparkSession spark, Map<String, String> options, Seq<org.apache.hadoop.fs.FileStatus> files) {
    return Option.apply(SCHEMA);
  }

  @Override
  public boolean supportDataType(org.apache.spark.sql.types.DataType type) {
    return type instanceof org.apache.spark.sql.types.BinaryType || type instanceof org.apache.spark.sql.types.LongType;
  }

  @Override
  public boolean isSplitable(SparkSession spark, Map<String, String> options, Path path) {
    return new CompressionCodecFactory(getHadoopConf(spark, options)).getCodec(path) == null;
  }

  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReader(
      SparkSession spark,
      StructType dataSchema,
      StructType partitionSchema,
      StructType requiredSchema,
      Seq<Filter> filters,
      Map<String, String> options,
      Configuration hadoopConf) {
    Broadcast<SerializableConfiguration> conf = SerializableConfiguration.broadcast(spark.sparkContext(), hadoopConf);
    Option<String> given = options.get(MAX_LINE_BYTES);
    if (given.isEmpty()) {
      given = options.get(MAX_LINE_BYTES.toLowerCase(java.util.Locale.ROOT));
    }
    int maxLineBytes = (int) Math.min(given.isEmpty() ? Long.MAX_VALUE : Long.parseLong(given.get()), LONGEST_ARRAY);
    String[] fields = requiredSchema.fieldNames();
    return new Reader(conf, maxLineBytes, fields);
  }

  private static final class Reader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
      implements Serializable {
    private final Broadcast<SerializableConfiguration> conf;
    private final int maxLineBytes;
    private final String[] fields;

    Reader(Broadcast<SerializableConfiguration> conf, int maxLineBytes, String[] fields) {
      this.conf = conf;
      this.maxLineBytes = maxLineBytes;
      this.fields = fields;
    }

    @Override
    public Iterator<InternalRow> apply(PartitionedFile file) {
      Configuration hadoop = conf.value().value();
      Path path = file.toPath();
      try {
        InputStream in;
        long start = file.start();
        long end = start + file.length();
        if (new CompressionCodecFactory(hadoop).getCodec(path) != null) {
          in = CodecStreams.createInputStreamWithCloseResource(hadoop, path);
          start = 0;
          end = Long.MAX_VALUE;
        } else {
          FSDataInputStream raw = path.getFileSystem(hadoop).open(path);
          raw.seek(start);
          in = raw;
          org.apache.spark.TaskContext task = org.apache.spark.TaskContext.get();
          if (task != null) {
            task.addTaskCompletionListener(
                new org.apache.spark.util.TaskCompletionListener() {
                  @Override
                  public void onTaskCompletion(org.apache.spark.TaskContext context) {
                    closeQuietly(raw);
                  }
                });
          }
        }
        return new Lines(new LineScanner(in, start, maxLineBytes + 1), start, end, fields);
      } catch (IOException error) {
        throw new UncheckedIOException(error);
      }
    }
  }

  private static void closeQuietly(InputStream in) {
    try {
      in.close();
    } catch (IOException ignored) {
      // the task is over; a failed close loses nothing
    }
  }

  private static final class Lines extends AbstractIterator<InternalRow> {
    private final LineScanner scanner;
    private final long end;
    private final String[] fields;
    private boolean ready;
    private boolean done;

    Lines(LineScanner scanner, long start, long end, String[] fields) {
      this.scanner = scanner;
      this.end = end;
      this.fields = fields;
      if (start != 0) {
        scanner.next(0); // the line begun before this split is the previous split's
      }
    }

    @Override
    public boolean hasNext() {
      if (!ready && !done) {
        done = scanner.position > end || !scanner.next(scanner.keep + (scanner.position == 0 ? 3 : 0));
        ready = !done;
      }
      return ready;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      ready = false;
      Object[] values = new Object[fields.length];
      for (int i = 0; i < fields.length; i++) {
        switch (fields[i]) {
          case "value":
            values[i] = scanner.value();
            break;
          case "line_offset":
            values[i] = scanner.lineStart;
            break;
          default:
            values[i] = scanner.lineBytes;
        }
      }
      return new GenericInternalRow(values);
    }
  }

  /** Reads lines through a buffer, keeping at most `keep` bytes of each. */
  static final class LineScanner {
    private static final byte[] BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
    private final InputStream in;
    final int keep;
    private final byte[] buffer = new byte[1 << 16];
    private int at;
    private int filled;
    long position;
    long lineStart;
    long lineBytes;
    private byte[] kept = new byte[256];
    private int keptLength;

    LineScanner(InputStream in, long position, int keep) {
      this.in = in;
      this.position = position;
      this.keep = keep;
    }

    byte[] value() {
      int from = lineStart == 0 && startsWithBom() ? BOM.length : 0;
      return Arrays.copyOfRange(kept, from, Math.min(keptLength, from + keep));
    }

    /** The line's length without the byte order mark `value` drops. */
    private boolean ended() {
      if (lineStart == 0 && startsWithBom()) {
        lineBytes -= BOM.length;
      }
      return true;
    }

    private boolean startsWithBom() {
      return keptLength >= 3 && kept[0] == BOM[0] && kept[1] == BOM[1] && kept[2] == BOM[2];
    }

    /** The next line, keeping up to `limit` of its bytes; false at the end of the input. */
    boolean next(int limit) {
      lineStart = position;
      lineBytes = 0;
      keptLength = 0;
      while (true) {
        if (at == filled && !fill()) {
          return lineBytes > 0 && ended();
        }
        int i = at;
        while (i < filled && buffer[i] != '\n' && buffer[i] != '\r') {
          i++;
        }
        int length = i - at;
        int room = (int) Math.min(length, Math.max(0, (long) limit - keptLength));
        if (room > 0) {
          if (keptLength + room > kept.length) {
            kept = Arrays.copyOf(kept, Math.max(keptLength + room, Math.min(2 * kept.length, limit)));
          }
          System.arraycopy(buffer, at, kept, keptLength, room);
          keptLength += room;
        }
        lineBytes += length;
        position += length;
        at = i;
        if (i < filled) {
          byte terminator = buffer[at++];
          position++;
          if (terminator == '\r' && (at < filled || fill()) && buffer[at] == '\n') {
            at++;
            position++;
          }
          return ended();
        }
      }
    }

    private boolean fill() {
      try {
        int read = in.read(buffer, 0, buffer.length);
        while (read == 0) {
          read = in.read(buffer, 0, buffer.length);
        }
        at = 0;
        filled = Math.max(read, 0);
        return read > 0;
      } catch (IOException error) {
        throw new UncheckedIOException(error);
      }
    }
  }
}
