// elementwise entry points: filled in below.
