// reduce entry points: filled in below.
