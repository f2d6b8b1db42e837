#pragma once
#include "forge/ops/core.h"
