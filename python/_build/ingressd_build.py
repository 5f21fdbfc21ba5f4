"""A PEP 517 build backend in the standard library alone, so that
`pip install ./python` works offline: setuptools in a fresh venv needs
`wheel` (and build isolation needs both from the network).

It packs ingressd_replica/*.py into a pure-Python wheel; the name, summary
and Python requirement come from pyproject.toml's [project] table, the
version from ingressd_replica/__init__.py, the licence from [project]'s
license = { text = ... } and the LICENSE file (a link to the repository's)
goes into the wheel's .dist-info and the sdist.  build_editable (pip install -e)
installs a .pth file pointing at this directory.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "ingressd_replica"


def _project():
	"""name, description, requires-python: the simple string keys of
	[project] (enough for this file; no TOML parser before 3.11)."""
	out, inside = {}, False
	with open(os.path.join(HERE, "pyproject.toml")) as f:
		for line in f:
			line = line.strip()
			if line.startswith("["):
				inside = line == "[project]"
			elif inside:
				m = re.match(r'^([\w-]+)\s*=\s*"([^"]*)"$', line)
				if m:
					out[m.group(1)] = m.group(2)
				m = re.match(r'^license\s*=\s*\{\s*text\s*=\s*"([^"]*)"',
				    line)
				if m:
					out["license"] = m.group(1)
	with open(os.path.join(HERE, PACKAGE, "__init__.py")) as f:
		out["version"] = re.search(r'^__version__ = "([^"]+)"', f.read(),
		    re.M).group(1)
	return out


def _names():
	p = _project()
	dist = re.sub(r"[-_.]+", "_", p["name"]).lower()
	return p, dist, "%s-%s" % (dist, p["version"])


def _metadata(p):
	with open(os.path.join(HERE, "README.md")) as f:
		readme = f.read()
	return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
	    "License: %s\nClassifier: License :: OSI Approved :: ISC License "
	    "(ISCL)\nRequires-Python: %s\n"
	    "Description-Content-Type: text/markdown\n\n"
	    "%s" % (p["name"], p["version"], p.get("description", ""),
	    p["license"], p.get("requires-python", ">=3.9"), readme))


def _license():
	with open(os.path.join(HERE, "LICENSE"), "rb") as f:
		return f.read()


def _dist_info(p):
	return {
		"METADATA": _metadata(p),
		"WHEEL": "Wheel-Version: 1.0\nGenerator: ingressd_build\n"
		    "Root-Is-Purelib: true\nTag: py3-none-any\n",
		"entry_points.txt": "[console_scripts]\ningressd-replica = "
		    "ingressd_replica.__main__:console\n",
	}


def _wheel(wheel_directory, files):
	"""files: {archive path: bytes}; RECORD is added."""
	p, dist, base = _names()
	info = base + ".dist-info"
	for k, v in _dist_info(p).items():
		files["%s/%s" % (info, k)] = v.encode("utf-8")
	files["%s/LICENSE" % info] = _license()
	record = []
	for path, data in files.items():
		digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
		record.append("%s,sha256=%s,%d" % (path, digest.rstrip(b"=")
		    .decode(), len(data)))
	record.append("%s/RECORD,," % info)
	files["%s/RECORD" % info] = ("\n".join(record) + "\n").encode()
	name = base + "-py3-none-any.whl"
	with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
	    zipfile.ZIP_DEFLATED) as z:
		for path in sorted(files):
			z.writestr(zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0)),
			    files[path])
	return name


def get_requires_for_build_wheel(config_settings=None):
	return []


get_requires_for_build_sdist = get_requires_for_build_editable = \
    get_requires_for_build_wheel


def build_wheel(wheel_directory, config_settings=None,
    metadata_directory=None):
	files = {}
	src = os.path.join(HERE, PACKAGE)
	for fn in sorted(os.listdir(src)):
		if fn.endswith(".py") or fn == "py.typed":
			with open(os.path.join(src, fn), "rb") as f:
				files["%s/%s" % (PACKAGE, fn)] = f.read()
	return _wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None,
    metadata_directory=None):
	return _wheel(wheel_directory, {PACKAGE + ".pth": (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
	_, _, base = _names()
	name = base + ".tar.gz"
	with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
		for rel in ["pyproject.toml", "README.md", "_build/ingressd_build.py"] + \
		    ["%s/%s" % (PACKAGE, fn) for fn in sorted(os.listdir(
		    os.path.join(HERE, PACKAGE))) if fn.endswith(".py") or fn == "py.typed"]:
			t.add(os.path.join(HERE, rel), "%s/%s" % (base, rel))
		# LICENSE is a link out of this directory: store its bytes.
		for rel, data in (("PKG-INFO", _metadata(_project()).encode()),
		    ("LICENSE", _license())):
			ti = tarfile.TarInfo("%s/%s" % (base, rel))
			ti.size = len(data)
			t.addfile(ti, io.BytesIO(data))
	return name
