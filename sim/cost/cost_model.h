// Transitional: the cost model now lives in compute.h, memory.h, dispatch.h and evaluator.h.
#pragma once
#include "sim/cost/compute.h"
#include "sim/cost/memory.h"
