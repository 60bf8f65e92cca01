"""fedbw's files on disk, below every other layer: written whole (:mod:`.atomic`) and named and
versioned one way (:mod:`.versioned`). Depends only on :mod:`fedbw.errors`."""
