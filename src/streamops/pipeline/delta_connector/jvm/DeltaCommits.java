package streamops.jvm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.delta.DeltaLog;
import org.apache.spark.sql.delta.DeltaOperations;
import org.apache.spark.sql.delta.OptimisticTransaction;
import org.apache.spark.sql.delta.Snapshot;
import org.apache.spark.sql.delta.VersionChecksum;
import org.apache.spark.sql.delta.actions.Action;
import org.apache.spark.sql.delta.actions.Metadata;
import org.apache.spark.sql.delta.actions.SetTransaction;
import org.apache.spark.sql.streaming.OutputMode;
import scala.Option;

/**
 * A native commit's delta-spark calls, made inside the JVM (pipeline/delta_connector/jvm_commits.py).
 * Through py4j the same commit took about 76 round trips (each class, method and Scala
 * conversion one), more time than delta-spark's commit itself; from here it takes three.
 * Compiled at run time against the session's own delta-spark, so its Scala and Delta versions
 * are the ones it calls.
 *
 * <p>A transaction starts from the snapshot this process's last commit to the table left, when
 * nothing has changed the table since: delta-spark's `startTransaction()` lists the table's log
 * first (a quarter of a commit's time, and more as the log grows), which tells a writer nothing
 * new when it made the table's last commit itself. Whether it did is a look at one file: the
 * commit it made is still there and no later one is (a later commit, by any writer, means a
 * listing). Every `relistEvery` versions the log is listed anyway, which picks up the
 * checkpoints written outside Spark and keeps the snapshot's list of commits short.
 */
public final class DeltaCommits {
  /** What delta-spark answers for a stream that never committed to the table. */
  public static final long NO_TXN = -1L;

  private final long relistEvery;
  private final ConcurrentHashMap<String, Table> tables = new ConcurrentHashMap<>();

  public DeltaCommits(int relistEvery) {
    this.relistEvery = relistEvery;
  }

  /** A transaction on `table`, started with `session` as the thread's active session. */
  public Transaction start(SparkSession session, String table) {
    return inSession(session, () -> {
      Table known = tables.computeIfAbsent(table, path -> new Table(DeltaLog.forTable(session, path)));
      Snapshot latest = known.log.unsafeVolatileSnapshot();
      OptimisticTransaction txn = known.isLatest(latest, relistEvery)
          ? known.log.startTransaction(Option.empty(), Option.apply(latest))
          : known.log.startTransaction();
      return new Transaction(session, known, txn);
    });
  }

  /** A table this process commits to: its log, and the version of its own last commit. */
  static final class Table {
    final DeltaLog log;
    final FileSystem files;
    volatile long committed = -1L;

    Table(DeltaLog log) {
      this.log = log;
      try {
        this.files = log.logPath().getFileSystem(log.newDeltaHadoopConf());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** Whether `snapshot` is the table as this process's last commit left it, and still is. */
    boolean isLatest(Snapshot snapshot, long relistEvery) {
      long version = snapshot.version();
      if (version < 0 || version != committed || (version + 1) % relistEvery == 0) {
        return false;
      }
      try {
        return files.exists(commitFile(version)) && !files.exists(commitFile(version + 1));
      } catch (IOException e) {
        return false;
      }
    }

    Path commitFile(long version) {
      return new Path(log.logPath(), String.format("%020d.json", version));
    }
  }

  static <T> T inSession(SparkSession session, Supplier<T> work) {
    Option<SparkSession> before = SparkSession.getActiveSession();
    SparkSession.setActiveSession(session);
    try {
      return work.get();
    } finally {
      if (before.isDefined()) {
        SparkSession.setActiveSession(before.get());
      } else {
        SparkSession.clearActiveSession();
      }
    }
  }

  /** One table's open transaction: delta-spark takes its settings from the active session at each step. */
  public static final class Transaction {
    private final SparkSession session;
    private final Table table;
    private final OptimisticTransaction txn;

    Transaction(SparkSession session, Table table, OptimisticTransaction txn) {
      this.session = session;
      this.table = table;
      this.txn = txn;
    }

    /**
     * The table's metaData action and the version `stream` last committed (NO_TXN: none), as
     * one JSON object. The version comes from the snapshot's checksum when it keeps the set
     * transactions: `txnVersion` rebuilds the table's state in a Spark job to answer.
     */
    public String state(String stream) {
      return inSession(session, () -> {
        long version = NO_TXN;
        Option<VersionChecksum> checksum = txn.snapshot().checksumOpt();
        Option<? extends scala.collection.Seq<SetTransaction>> kept =
            checksum.isDefined() ? checksum.get().setTransactions() : Option.empty();
        if (kept.isDefined()) {
          scala.collection.Iterator<SetTransaction> found = kept.get().iterator();
          while (found.hasNext()) {
            SetTransaction entry = found.next();
            if (entry.appId().equals(stream)) {
              version = entry.version();
            }
          }
        } else {
          version = txn.txnVersion(stream);
        }
        return "{\"txn\":" + version + ",\"metadata\":" + txn.metadata().json() + "}";
      });
    }

    /**
     * Commit `actions` (one JSON action a line) as the batch's STREAMING UPDATE, after the
     * table's new metaData action when `metadata` is not null; the version written.
     */
    public long commit(String metadata, String actions, String queryId, long batchId, String userMetadata) {
      return inSession(session, () -> {
        if (metadata != null) {
          txn.updateMetadata((Metadata) Action.fromJson(metadata), false);
        }
        List<Action> parsed = new ArrayList<>();
        for (String line : actions.split("\n")) {
          if (!line.isEmpty()) {
            parsed.add(Action.fromJson(line));
          }
        }
        DeltaOperations.StreamingUpdate operation =
            new DeltaOperations.StreamingUpdate(OutputMode.Append(), queryId, batchId, Option.apply(userMetadata));
        long version = txn.commit(scala.collection.JavaConverters.asScalaBuffer(parsed).toList(), operation);
        table.committed = version;
        return version;
      });
    }
  }
}
