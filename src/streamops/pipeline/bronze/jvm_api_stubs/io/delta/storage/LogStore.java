package io.delta.storage;

import java.io.IOException;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/** Compile-time stand-in for delta-storage's class (the session's delta-spark JARs bring it). */
public abstract class LogStore {
  public LogStore(Configuration initHadoopConf) {}

  public abstract Iterator<String> read(Path path, Configuration hadoopConf) throws IOException;

  public abstract void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
      throws IOException;

  public abstract Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException;

  public abstract Path resolvePathOnPhysicalStorage(Path path, Configuration hadoopConf) throws IOException;

  public abstract Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) throws IOException;
}
