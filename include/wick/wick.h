#pragma once
// Everything wick offers, in one include.
#include <wick/tensor/cuda.h>
#include <wick/tensor/device.h>
#include <wick/tensor/dtype.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/join.h>
#include <wick/tensor/linalg.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/tensor.h>
