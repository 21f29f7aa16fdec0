"""One storage layer for every reader and writer of checkpoints, logs and lakes.

A `Location` (location.py) names a file or directory on the local disk or in an object store
(`s3://`, `gs://`, `az://`, `abfss://`); its methods read, list, write and delete through the
backend of its store: the operating system for local paths (local_files.py), Rust's
object_store through obstore for the clouds (object_store_files.py), configured from the
standard environment of each cloud (store_options.py) so delta-rs gets the same options.
"""
