"""The Python SDK as pip builds it: python/_build's PEP 517 backend, called
as a frontend would (pip install ./python works offline with it).  The
wheel must carry the project's one licence (ISC, the root LICENSE) in its
metadata and import from the wheel alone; the sdist must carry LICENSE.
"""

import email.parser
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY = os.path.join(ROOT, "python")

# The frontend's side of PEP 517, in a fresh interpreter whose cwd is the
# project (backend-path is relative to it).
FRONTEND = """
import sys
sys.path.insert(0, "_build")
import ingressd_build
print(getattr(ingressd_build, sys.argv[1])(sys.argv[2]))
"""


def build(hook, outdir):
	out = subprocess.run([sys.executable, "-c", FRONTEND, hook, outdir],
	    cwd=PY, capture_output=True, text=True, timeout=60)
	if out.returncode != 0:
		raise AssertionError("%s failed: %s" % (hook, out.stderr))
	return os.path.join(outdir, out.stdout.strip().splitlines()[-1])


class Wheel(unittest.TestCase):
	@classmethod
	def setUpClass(cls):
		cls.tmp = tempfile.TemporaryDirectory()
		cls.wheel = build("build_wheel", cls.tmp.name)
		with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
			cls.license = f.read()

	@classmethod
	def tearDownClass(cls):
		cls.tmp.cleanup()

	def dist_info(self, z):
		return next(n.split("/")[0] for n in z.namelist()
		    if n.endswith(".dist-info/METADATA"))

	def test_license_metadata(self):
		self.assertIn(b"ISC License", self.license)
		with zipfile.ZipFile(self.wheel) as z:
			info = self.dist_info(z)
			meta = email.parser.Parser().parsestr(
			    z.read(info + "/METADATA").decode())
			self.assertEqual(meta["License"], "ISC")
			self.assertIn("License :: OSI Approved :: ISC License (ISCL)",
			    meta.get_all("Classifier"))
			self.assertEqual(z.read(info + "/LICENSE"), self.license)
			record = z.read(info + "/RECORD").decode()
			self.assertIn(info + "/LICENSE,sha256=", record)

	def test_imports_from_wheel(self):
		out = subprocess.run([sys.executable, "-I", "-c",
		    "import sys; sys.path.insert(0, sys.argv[1]); "
		    "import ingressd_replica as r; "
		    "print(r.__file__.startswith(sys.argv[1]), r.__version__, "
		    "callable(r.serve))", self.wheel],
		    capture_output=True, text=True, timeout=60)
		self.assertEqual(out.returncode, 0, out.stderr)
		self.assertEqual(out.stdout.split()[0], "True")
		self.assertEqual(out.stdout.split()[2], "True")

	def test_typed_marker_packed(self):
		"""PEP 561: the type hints reach users only with py.typed."""
		with zipfile.ZipFile(self.wheel) as z:
			self.assertIn("ingressd_replica/py.typed", z.namelist())
		sdist = build("build_sdist", self.tmp.name)
		with tarfile.open(sdist) as t:
			self.assertTrue(any(m.name.endswith("/ingressd_replica/py.typed")
			    for m in t.getmembers()))

	def test_sdist_has_license(self):
		sdist = build("build_sdist", self.tmp.name)
		with tarfile.open(sdist) as t:
			lic = [m for m in t.getmembers()
			    if m.name.endswith("/LICENSE")]
			self.assertEqual(len(lic), 1)
			self.assertTrue(lic[0].isfile())
			self.assertEqual(t.extractfile(lic[0]).read(), self.license)
			pkg = next(m for m in t.getmembers()
			    if m.name.endswith("/PKG-INFO"))
			self.assertIn(b"\nLicense: ISC\n",
			    t.extractfile(pkg).read())


if __name__ == "__main__":
	unittest.main()
