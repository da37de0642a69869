#pragma once
// The version of wick (CMakeLists.txt reads the project's version from these three lines).
#define WICK_VERSION_MAJOR 0
#define WICK_VERSION_MINOR 1
#define WICK_VERSION_PATCH 0
#define WICK_VERSION_STRING "0.1.0"
// One number that orders versions: 10000 * major + 100 * minor + patch.
#define WICK_VERSION (WICK_VERSION_MAJOR * 10000 + WICK_VERSION_MINOR * 100 + WICK_VERSION_PATCH)
// What the build of the library has: the distributed package (WICK_DISTRIBUTED), and CPU
// kernels for one machine only (WICK_NATIVE) rather than for any CPU of its architecture.
// The values here are the default build's; a build writes its own into a copy of this
// header (<build>/installed/wick/version.h), which its targets include instead and which
// is the one installed.
#ifndef WICK_HAS_DISTRIBUTED
#define WICK_HAS_DISTRIBUTED 1
#endif
#ifndef WICK_NATIVE_BUILD
#define WICK_NATIVE_BUILD 0
#endif
