"""What an operator needs to run in a cluster, computed from its code: ``anyop manifests``.

Pure: the CRDs of its typed resources, RBAC from its registry (:mod:`~anyop.manifests.rbac`),
its ServiceAccount, Deployment and Service (:mod:`~anyop.manifests.workloads`), as files
(:mod:`~anyop.manifests.files`). The CLI reads and writes them.
"""
