// indexing entry points: filled in below.
