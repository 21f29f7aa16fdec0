package streamops.jvm;

import io.delta.storage.HadoopFileSystemLogStore;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * delta-spark's log writes for tables on the local file system, through java.nio.
 *
 * <p>delta-spark's default for `file:` paths (HDFSLogStore) goes through Hadoop's local file
 * system, which without Hadoop's native library runs a `chmod` process for every file it creates
 * and a `readlink` process for each side of a rename: several processes forked by the JVM for each
 * commit and each checksum file. Here the commit is written to a hidden temporary file, then
 * published with a hard link, which the file system refuses atomically when the commit exists
 * (put-if-absent, as the LogStore contract asks, also across processes); where hard links are not
 * supported it falls back to an existence check and a rename under this JVM's lock, as Delta's
 * LocalLogStore does. Reads and listings are HadoopFileSystemLogStore's.
 */
public class LocalFileLogStore extends HadoopFileSystemLogStore {
  public LocalFileLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
      throws IOException {
    java.nio.file.Path target = Paths.get(path.getFileSystem(hadoopConf).makeQualified(path).toUri());
    if (!Files.isDirectory(target.getParent())) {
      throw new java.io.FileNotFoundException("No such directory: " + target.getParent());
    }
    java.nio.file.Path temp = target.resolveSibling("." + target.getFileName() + "." + UUID.randomUUID() + ".tmp");
    try {
      try (OutputStream out = Files.newOutputStream(temp, StandardOpenOption.CREATE_NEW)) {
        while (actions.hasNext()) {
          out.write((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
        }
      }
      LocalFiles.publish(temp, target, overwrite);
    } finally {
      Files.deleteIfExists(temp);
    }
  }

  @Override
  public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
    return false;
  }
}
