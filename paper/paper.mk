# paper.mk — the report rule, included by the Makefile.
#   make paper RESULTS=results/<gpu>-<date>   (a campaign folder, or "a.h5 [b.h5 ...]") install
#        missing TeX packages, then write paper/out/report.pdf and paper/out/claims.tsv
.PHONY: paper
paper: $(BUILD)/topkp
	TOPKP=$(BUILD)/topkp BASELINE=$(BASELINE) bash paper/build.sh $(RESULTS)
