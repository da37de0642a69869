#pragma once
// The environment each launcher gives a rank, read into the names wick uses (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), so one program starts under each:
//   wickrun, torchrun   set those five names themselves;
//   Open MPI's mpirun   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK; MASTER_ADDR must be given
//                       (mpirun -x MASTER_ADDR=host), MASTER_PORT defaults to 29500;
//   Slurm's srun        SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID; MASTER_ADDR
//                       defaults to the first host of SLURM_STEP_NODELIST (else
//                       SLURM_JOB_NODELIST), MASTER_PORT to 20000 + SLURM_JOB_ID % 20000
//                       (every task of a job computes the same one).
// A name set in the environment always wins, and the first launcher above whose variables
// are present supplies the rest. Slurm is recognised by SLURM_STEP_NUM_TASKS, which srun
// sets for the tasks of a step: a batch script, which has SLURM_PROCID=0 too, stays one
// process.
#include <functional>
#include <string>

namespace wick::distributed {

using EnvironmentLookup = std::function<const char*(const char*)>;

// `lookup` seen through the launchers above: RANK and the others come from the launcher's
// own variables where the environment does not set them. The returned lookup owns the
// strings it derives and may outlive `lookup`'s temporaries but not `lookup` itself.
EnvironmentLookup with_launcher_names(EnvironmentLookup lookup);

// Which launcher supplied the values: "environment" (RANK etc. set: wickrun, torchrun, a
// script), "mpirun", "srun", or "" when none did (a single process).
std::string detected_launcher(const EnvironmentLookup& lookup);

// The first host of a Slurm node list: "gpu[03-05,09],cpu1" -> "gpu03", "a,b" -> "a".
// Throws wick::Error for a list it cannot read.
std::string first_slurm_host(const std::string& nodelist);

}  // namespace wick::distributed
