// linalg entry points: filled in below.
