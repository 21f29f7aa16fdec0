package io.delta.storage;

import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/** Compile-time stand-in for delta-storage's class (the session's delta-spark JARs bring it). */
public abstract class HadoopFileSystemLogStore extends LogStore {
  public HadoopFileSystemLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public Iterator<String> read(Path path, Configuration hadoopConf) {
    throw new UnsupportedOperationException("compile-time stand-in");
  }

  @Override
  public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) {
    throw new UnsupportedOperationException("compile-time stand-in");
  }

  @Override
  public Path resolvePathOnPhysicalStorage(Path path, Configuration hadoopConf) {
    throw new UnsupportedOperationException("compile-time stand-in");
  }
}
