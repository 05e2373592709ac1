# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json | filecheck %s --check-prefix=EMITTED
# RUN: %fusilli-opt %t.json --pass-pipeline=fusilli-layout | filecheck %s --check-prefix=LAYOUT
# RUN: %fusilli-opt %t.json --pass-pipeline=default | filecheck %s --check-prefix=DEFAULT
# RUN: cat %t.json | %fusilli-opt - --pass-pipeline=default | filecheck %s --check-prefix=DEFAULT

# fusilli-opt reads a graph JSON (Graph.to_json), emits its module and runs
# the given pipeline: here an NHWC add + relu, whose permutes the layout pass
# cancels and whose chain fusion turns into one generic in physical order.

import fusilli as fs

g = fs.Graph(name="add_relu_nhwc")
dim = [1, 3, 2, 4]
a = g.tensor(name="a", dim=dim, stride=fs.strides(dim, "NHWC"))
b = g.tensor(name="b", dim=dim, stride=fs.strides(dim, "NHWC"))
y = g.relu(g.add(a, b, name="add"), name="relu")
y.set_output(True).set_name("y")
print(g.to_json())

# EMITTED: func.func @main(%{{.*}}: !torch.tensor<[1,2,4,3],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[1,2,4,3],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[1,2,4,3],f32>)
# EMITTED: torch.aten.permute %[[A]]
# EMITTED: torch.aten.permute %[[B]]
# EMITTED: torch.aten.add.Tensor
# EMITTED: torch.aten.relu
# EMITTED: torch.overwrite.tensor.contents

# LAYOUT: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[1,2,4,3],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[1,2,4,3],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[1,2,4,3],f32>)
# LAYOUT-NOT: torch.aten.permute
# LAYOUT: %[[ADD:.*]] = torch.aten.add.Tensor %[[A]], %[[B]], %{{.*}} -> !torch.vtensor<[1,2,4,3],f32>
# LAYOUT: %[[R:.*]] = torch.aten.relu %[[ADD]]
# LAYOUT: torch.overwrite.tensor.contents %[[R]] overwrites %[[Y]]

# DEFAULT-NOT: torch.aten.permute
# DEFAULT: %[[G:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x4x3xf32>)
# DEFAULT: arith.addf
# DEFAULT: arith.maximumf
# DEFAULT: %[[R:.*]] = torch_c.from_builtin_tensor %[[G]]
# DEFAULT: torch.overwrite.tensor.contents %[[R]] overwrites
