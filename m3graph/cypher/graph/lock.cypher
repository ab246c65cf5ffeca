// mode: write
// params: name
// Takes a write lock on a named node until the transaction ends: serializes identity resolution and
// character refreshes so that concurrent workers behave like a sequential run.
MERGE (l:Lock {name: $name})
SET l.touched_at = timestamp()
