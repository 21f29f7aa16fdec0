package streamops.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.delta.DeltaLog;
import org.apache.spark.sql.delta.DeltaOperations;
import org.apache.spark.sql.delta.OptimisticTransaction;
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
 */
public final class DeltaCommits {
  /** What delta-spark answers for a stream that never committed to the table. */
  public static final long NO_TXN = -1L;

  /** A transaction on `table`, started with `session` as the thread's active session. */
  public Transaction start(SparkSession session, String table) {
    return inSession(session, () -> new Transaction(session, DeltaLog.forTable(session, table).startTransaction()));
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
    private final OptimisticTransaction txn;

    Transaction(SparkSession session, OptimisticTransaction txn) {
      this.session = session;
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
        return txn.commit(scala.collection.JavaConverters.asScalaBuffer(parsed).toList(), operation);
      });
    }
  }
}
