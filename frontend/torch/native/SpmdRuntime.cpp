//===- SpmdRuntime.cpp - The runtime as a Python module -------------------===//
//
// _spmd_runtime: load a program or plan (partitioned and compiled in this
// process, kernels JIT-compiled) and keep it on in-process ranks between
// runs (runtime/Session). Arrays cross as NumPy arrays through the buffer
// protocol: an argument is scattered to the ranks straight from the
// caller's buffer, a result is assembled straight into a new array.
// Failures raise RuntimeError with the runtime's message. The GIL is
// released while the ranks run.
//
// Built with exceptions and RTTI (pybind11 needs them); it includes no
// LLVM/MLIR header, only the plain runtime and targets/run/ProgramFile.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/BlasCore.h"
#include "runtime/GlobalIO.h"
#include "runtime/RankSteps.h"
#include "runtime/Ranks.h"
#include "runtime/Session.h"
#include "runtime/Trace.h"
#include "targets/run/ProgramFile.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>

namespace py = pybind11;
using namespace spmd;
using namespace spmd::plan;

namespace {

void check(const std::string &error) {
  if (!error.empty())
    throw std::runtime_error(error);
}

/// NumPy's dtype for a runtime type; bf16 (which NumPy lacks) crosses as
/// f32, i8 as int8 (bool arrays are accepted for it).
py::dtype numpyType(DType type) {
  switch (type) {
  case DType::F32:
  case DType::BF16:
    return py::dtype::of<float>();
  case DType::F16:
    return py::dtype("float16");
  case DType::F64:
    return py::dtype::of<double>();
  case DType::I32:
    return py::dtype::of<int32_t>();
  case DType::I64:
    return py::dtype::of<int64_t>();
  case DType::I8:
    return py::dtype::of<int8_t>();
  }
  return py::dtype::of<float>();
}

std::optional<DType> runtimeType(const py::dtype &dt) {
  for (DType type :
       {DType::F32, DType::F64, DType::F16, DType::I32, DType::I64, DType::I8})
    if (dt.is(numpyType(type)) || dt.equal(numpyType(type)))
      return type;
  if (dt.equal(py::dtype::of<bool>()))
    return DType::I8;
  return std::nullopt;
}

py::array toNumpy(NpyArray &&array) {
  if (array.dtype == DType::BF16) {
    std::vector<char> wide = convert(array, DType::F32);
    array.data = std::move(wide);
    array.dtype = DType::F32;
  }
  // Row-major strides, given explicitly.
  std::vector<py::ssize_t> shape(array.shape.begin(), array.shape.end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(dtypeSize(array.dtype));
  for (size_t k = shape.size(); k-- > 0;) {
    strides[k] = stride;
    stride *= shape[k];
  }
  py::array out(numpyType(array.dtype), shape, strides);
  std::memcpy(out.mutable_data(), array.data.data(), array.data.size());
  return out;
}

py::dict describe(const Schedule &schedule, const TensorInfo &info) {
  py::dict d;
  d["dtype"] = dtypeName(info.type);
  Shape global = globalShapeOf(schedule.mesh, info);
  d["shape"] = std::vector<int64_t>(global.begin(), global.end());
  d["local_shape"] =
      std::vector<int64_t>(info.localShape.begin(), info.localShape.end());
  d["layout"] = info.layout ? info.layout->str() : std::string("replicated");
  return d;
}

struct PyProgram {
  std::unique_ptr<ProgramFile> file;
  const Schedule &schedule() const { return file->schedule(); }
};

struct PySession {
  std::shared_ptr<PyProgram> program;
  std::unique_ptr<Session> session;
};

} // namespace

PYBIND11_MODULE(_spmd_runtime, m) {
  m.doc() = "spmd's runtime: plans on in-process ranks (threads) or on "
            "the processes of an mpirun job";

  m.def(
      "mpi_init",
      [] {
        if (MpiRun::active())
          return;
        int argc = 0;
        char **argv = nullptr;
        check(MpiRun::initialize(&argc, &argv));
      },
      "Initializes MPI (once; in an mpirun job).");
  m.def("mpi_finalize", [] { MpiRun::finalize(); });
  m.def(
      "mpi_abort", [](const std::string &reason) { MpiRun::abortJob(reason); },
      "Prints the reason and stops every process of the job.");
  m.def("mpi_active", [] { return MpiRun::active(); });
  m.def("blas_info", &spmd::describeBlas,
        "The BLAS library and the CPU core its kernels are for.");

  py::class_<PyProgram, std::shared_ptr<PyProgram>>(m, "Program")
      .def(py::init([](const std::string &path, const std::string &entry,
                       const std::string &partition) {
             std::string error;
             auto program = std::make_shared<PyProgram>();
             {
               py::gil_scoped_release release;
               program->file = ProgramFile::load(path, entry, partition, error);
             }
             if (!program->file)
               throw std::runtime_error(error);
             return program;
           }),
           py::arg("path"), py::arg("entry") = "",
           py::arg("partition") = "auto",
           "Loads a program (.mlir: a global annotated program is "
           "partitioned and compiled; a plan is used as it is).")
      .def_property_readonly(
          "name", [](const PyProgram &p) { return p.schedule().name; })
      .def_property_readonly(
          "mesh",
          [](const PyProgram &p) {
            const Mesh &mesh = p.schedule().mesh;
            py::list axes;
            for (int64_t a = 0; a < mesh.rank(); ++a)
              axes.append(py::make_tuple(mesh.axisNames[a], mesh.axisSizes[a]));
            return axes;
          })
      .def_property_readonly(
          "num_ranks",
          [](const PyProgram &p) { return p.schedule().mesh.numDevices(); })
      .def_property_readonly("args",
                             [](const PyProgram &p) {
                               py::list out;
                               for (const TensorInfo &a : p.schedule().args)
                                 out.append(describe(p.schedule(), a));
                               return out;
                             })
      .def_property_readonly("results",
                             [](const PyProgram &p) {
                               py::list out;
                               for (const TensorInfo &r : p.schedule().results)
                                 out.append(describe(p.schedule(), r));
                               return out;
                             })
      .def_property_readonly(
          "arena_bytes",
          [](const PyProgram &p) { return p.schedule().arenaBytes; },
          "bytes of every rank's arena (the memory plan's peak of "
          "intermediates)")
      .def_property_readonly(
          "feedable",
          [](const PyProgram &p) { return feedablePrefix(p.schedule()); },
          "how many results (a prefix) can feed the arguments of the same "
          "index")
      .def("plan_text", [](const PyProgram &p) { return p.schedule().str(); });

  py::class_<PySession>(m, "Session")
      .def(py::init([](std::shared_ptr<PyProgram> program, double timeout,
                       const std::string &comm, const std::string &backend) {
             if (comm != "inproc" && comm != "mpi")
               throw std::runtime_error("comm must be inproc or mpi, not '" +
                                        comm + "'");
             if (comm == "mpi" && !MpiRun::active())
               throw std::runtime_error(
                   "comm 'mpi': call mpi_init() first (in an mpirun job)");
             auto s = std::make_unique<PySession>();
             s->program = program;
             SessionOptions options;
             options.timeoutSeconds = timeout;
             options.mpi = comm == "mpi";
             std::string error;
             {
               py::gil_scoped_release release;
               RankMaker ranks = program->file->ranks(backend, comm, error);
               if (ranks)
                 s->session = Session::create(program->schedule(), ranks,
                                              options, error);
             }
             if (!s->session)
               throw std::runtime_error(error);
             return s;
           }),
           py::arg("program"), py::arg("timeout") = 60.0,
           py::arg("comm") = "inproc", py::arg("backend") = "cpu",
           "The program's ranks: threads of this process (comm 'inproc'), "
           "or this process's rank of an mpirun job (comm 'mpi'; reading a "
           "global value is then collective); on the CPU executor (backend "
           "'cpu'), a GPU each ('cuda') or the emulated GPU ('cuda-emu').")
      .def_property_readonly(
          "ranks", [](const PySession &s) { return s.session->ranks(); },
          "the ranks this process holds")
      .def("set_arg",
           [](PySession &s, size_t i, py::array array) {
             py::array c = py::array::ensure(array, py::array::c_style |
                                                        py::array::forcecast);
             if (!c)
               throw std::runtime_error("argument " + std::to_string(i) +
                                        ": not an array");
             std::optional<DType> type = runtimeType(c.dtype());
             if (!type)
               throw std::runtime_error("argument " + std::to_string(i) +
                                        ": unsupported dtype " +
                                        std::string(py::str(c.dtype())));
             Shape shape(c.shape(), c.shape() + c.ndim());
             check(s.session->setArg(i, *type, shape, c.data()));
           })
      .def("get_arg",
           [](PySession &s, size_t i) {
             NpyArray out;
             check(s.session->getArg(i, out));
             return toNumpy(std::move(out));
           })
      .def(
          "run",
          [](PySession &s, size_t feed) {
            std::string error;
            {
              py::gil_scoped_release release;
              error = s.session->run(feed);
            }
            check(error);
          },
          py::arg("feed") = 0,
          "One run on every rank; then results 0..feed-1 become arguments "
          "0..feed-1.")
      .def("get_result",
           [](PySession &s, size_t i) {
             NpyArray out;
             check(s.session->getResult(i, out));
             return toNumpy(std::move(out));
           })
      .def(
          "barrier",
          [](PySession &s) {
            std::string error;
            {
              py::gil_scoped_release release;
              error = s.session->barrier();
            }
            check(error);
          },
          "Under MPI, waits for every process (a no-op with threads).")
      .def_property_readonly(
          "runs", [](const PySession &s) { return s.session->runs(); })
      .def(
          "memory",
          [](const PySession &s) {
            py::list out;
            const Schedule &schedule = s.program->schedule();
            for (int64_t d : s.session->ranks()) {
              py::dict rank;
              rank["rank"] = d;
              rank["arena_bytes"] = schedule.arenaBytes;
              rank["argument_bytes"] = s.session->argumentBytes(d);
              out.append(rank);
            }
            return out;
          },
          "Bytes each rank holds: its arena (the memory plan's peak of "
          "intermediates) and its blocks of the arguments.")
      .def(
          "set_trace",
          [](PySession &s, bool on) { return s.session->setTrace(on); },
          "Records every step of later runs; False where the backend cannot "
          "(the GPU executors).")
      .def("clear_trace", [](PySession &s) { s.session->clearTrace(); })
      .def(
          "write_trace",
          [](PySession &s, const std::string &path) {
            check(writeChromeTrace(path, s.session->traces(),
                                   s.session->ranks()));
          },
          "Writes the recorded steps as a Chrome trace (Perfetto).")
      .def(
          "profile",
          [](PySession &s, int64_t rank) {
            const auto &traces = s.session->traces();
            const std::vector<int64_t> &held = s.session->ranks();
            if (std::find(held.begin(), held.end(), rank) == held.end())
              throw std::runtime_error("rank " + std::to_string(rank) +
                                       " is not held by this process");
            return profileSummary(traces[rank], s.session->runs(), rank);
          },
          py::arg("rank") = 0,
          "Time by step kind and the costliest kernels of one rank's "
          "recorded steps.");
}
