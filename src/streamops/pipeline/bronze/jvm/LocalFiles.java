package streamops.jvm;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Publishing a fully written temporary file under its final name on the local file system, as
 * Delta's log and Spark's checkpoint files need it: where the name must not exist, a hard link,
 * which the file system refuses atomically when it does (put-if-absent, also across processes);
 * where hard links are not supported, an existence check and a move under this JVM's lock, as
 * Delta's LocalLogStore does; where it may be replaced, an atomic move.
 */
final class LocalFiles {
  private LocalFiles() {}

  static void publish(Path temp, Path target, boolean overwrite) throws IOException {
    if (overwrite) {
      Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      return;
    }
    try {
      Files.createLink(target, temp);
    } catch (FileAlreadyExistsException exists) {
      throw exists;
    } catch (UnsupportedOperationException | FileSystemException noLinks) {
      synchronized (LocalFiles.class) {
        if (Files.exists(target)) {
          throw new FileAlreadyExistsException(target.toString());
        }
        Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
        return;
      }
    }
    Files.delete(temp);
  }
}
